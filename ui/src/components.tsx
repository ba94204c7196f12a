/** Small pieces the views share. */
import type { ComponentChildren } from 'preact';
import { useEffect, useState } from 'preact/hooks';

export function Badge({ kind, children }: { kind: string; children: ComponentChildren }) {
  return <span class={`badge ${kind}`}>{children}</span>;
}

export function OutcomeBadge({ outcome, status }: { outcome: string; status?: string | null }) {
  if (outcome === 'error') return <Badge kind="error">{status ?? 'error'}</Badge>;
  if (outcome === 'loop_stopped') return <Badge kind="warn">loop stopped</Badge>;
  return status ? <Badge kind="ok">{status}</Badge> : null;
}

export function Json({ value }: { value: unknown }) {
  return <pre class="json">{JSON.stringify(value, null, 2)}</pre>;
}

export function ErrorLine({ error }: { error: Error | string | undefined }) {
  if (!error) return null;
  return <p class="error">{typeof error === 'string' ? error : error.message}</p>;
}

/** Loads once per `deps` change; gives the value, the error, and a reload. */
export function useLoad<T>(
  load: () => Promise<T>,
  deps: unknown[],
): { value?: T; error?: Error; reload: () => void } {
  const [state, setState] = useState<{ value?: T; error?: Error }>({});
  const [tick, setTick] = useState(0);
  // The caller names what the load depends on (`deps`).
  useEffect(() => {
    let live = true;
    load().then(
      (value) => live && setState({ value }),
      (error: Error) => live && setState({ error }),
    );
    return () => {
      live = false;
    };
  }, [...deps, tick]);
  return { ...state, reload: () => setTick((t) => t + 1) };
}
