/**
 * What the crumbs HTTP API answers, as types: the one module the typed client (`crumbs-client.ts`, the package's
 * `crumbs/client`) and the dashboard (`ui/src`) take shapes from. The contract's schemas
 * (`shared/core/api/contract/schemas.ts`, which `docs/openapi.json` is generated from) give them as `z.infer`
 * types; `contract/conformance.ts` holds each equal to the type its handler answers with. A few shapes the
 * contract describes loosely (a thread's nodes, an explanation's selectors, change events) come from the code
 * that builds them.
 *
 * Types only: the dashboard is bundled for the browser, where a value import of these server modules would drag
 * Node code (and zod) in; type exports are erased by the build.
 */
export type { Explanation, RuleStatus } from '#shared/core/api/activity-routes.ts';
export type {
  ApprovalAnswer,
  ApprovalItem,
  ApprovalList,
  ChannelInfo as ChangeChannelInfo,
  DefinitionSummary,
  DeletionResult,
  ExportPage,
  FailureSummary,
  Problem as ProblemBody,
  RequestCancel,
  RequestUsageReport,
  StreamInfo,
  UsageReport,
} from '#shared/core/api/contract/schemas.ts';
export type { RequestUsageItem, UsageItem, UsageReportAmounts } from '#shared/core/api/usage-routes.ts';
export type { ChangeEvent } from '#shared/core/stream/changes.ts';
export type { FeedChange } from '#shared/core/stream/feed-events.ts';
export type { ThreadNode, ThreadView } from '#shared/core/stream/threads.ts';
export type {
  Breadcrumb,
  BreadcrumbVersion,
  ContextView,
  CreateBreadcrumbInput,
  UpdateBreadcrumbInput,
} from '#shared/domain/breadcrumb.ts';
