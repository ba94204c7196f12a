/** Shapes the dashboard reads, from the server's own modules (types only: nothing of them is bundled). */
export type { ChangeEvent } from '#shared/core/stream/changes.ts';
export type { ThreadNode, ThreadView } from '#shared/core/stream/threads.ts';
export type { Breadcrumb, ContextView } from '#shared/domain/breadcrumb.ts';
