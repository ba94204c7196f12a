/**
 * What the crumbs HTTP API answers, as types: the one module the CLI client (`cli/api-client.ts`) and the dashboard
 * (`ui/src`) take response shapes from. Each shape is declared once, beside the code that builds the answer, and
 * re-exported here.
 *
 * Types only: the dashboard is bundled for the browser, where a value import of these server modules would drag
 * Node code in; type exports are erased by the build.
 */
export type {
  ChangeChannelInfo,
  DefinitionSummary,
  Explanation,
  FailureSummary,
  RuleStatus,
} from '#shared/core/api/activity-routes.ts';
export type { ApprovalAnswer, ApprovalItem, ApprovalList } from '#shared/core/api/approval-routes.ts';
export type { RequestCancel, StreamInfo } from '#shared/core/api/request-routes.ts';
export type {
  RequestUsageItem,
  RequestUsageReport,
  UsageItem,
  UsageReport,
  UsageReportAmounts,
} from '#shared/core/api/usage-routes.ts';
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
