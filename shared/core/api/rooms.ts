/**
 * What a room (DESIGN.md "New capabilities land as rooms") adds to the API, registered once where the API is
 * built (`functions/api/handler.ts`): its routes, and a gate every write of a breadcrumb passes before it is
 * stored — to refuse a writer the room does not accept, or a record it cannot use, with a 4xx that changes nothing.
 */
import type { Caller, HttpRequest, HttpResult } from './http.ts';

export type RoomRouteHandler = (
  request: HttpRequest,
  params: Record<string, string>,
  caller: Caller,
) => Promise<HttpResult>;

export interface RoomRoute {
  /** The path with `{param}` placeholders, as the README's route table writes it. */
  readonly template: string;
  /** Named groups for the parameters (`ws` is the workspace, checked against the caller like every route's). */
  readonly pattern: RegExp;
  readonly methods: Partial<Record<string, RoomRouteHandler>>;
}

/** A write about to be stored: create, replace (PUT), update (PATCH; `schema_name` is the stored one) or delete. */
export interface RoomWrite {
  readonly op: 'create' | 'replace' | 'update' | 'delete';
  readonly workspace: string;
  readonly schema_name: string;
  /** The context as it will be stored (absent for a delete, or a PATCH that leaves it). */
  readonly context?: Record<string, unknown>;
  readonly caller: Caller;
}

export interface RoomApi {
  readonly routes?: readonly RoomRoute[];
  /** Throws a 4xx CrumbsError to refuse the write; the schemas it gates say when it is asked. */
  readonly gate?: { readonly schemas: ReadonlySet<string>; check(write: RoomWrite): void | Promise<void> };
}
