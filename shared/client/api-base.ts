/**
 * Where the API is, seen from the dashboard: the dashboard is served at `<API base URL>/ui/`, so the API's base is
 * the page's path up to its `/ui` segment — empty under `crumbs dev` (`/ui/`), the stage on AWS (`/prod/ui/`: a REST
 * API's URLs start with its stage). Requests then name `<base>/v1/…` on the page's own origin.
 */
export function apiBaseOf(pathname: string): string {
  const at = pathname.search(/\/ui(?:\/|$)/);
  return at < 0 ? '' : pathname.slice(0, at);
}
