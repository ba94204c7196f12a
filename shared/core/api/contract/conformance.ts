/**
 * The handlers' answer types and the contract's schemas are the same shapes: each pair below must be assignable
 * both ways, so `tsc` fails when a handler's answer grows a field its schema does not describe (or the reverse).
 * Types only: nothing here runs.
 */

import type * as z from '#shared/domain/zod.ts';
import type { ChangeChannelInfo, DefinitionSummary, FailureSummary, RuleStatus } from '../activity-routes.ts';
import type { ApprovalAnswer, ApprovalItem, ApprovalList } from '../approval-routes.ts';
import type { RequestCancel, StreamInfo } from '../request-routes.ts';
import type { RequestUsageReport, UsageReport } from '../usage-routes.ts';
import type { DeletionResult, ExportDeletion } from '../workspace-routes.ts';
import type * as S from './schemas.ts';

type Same<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false;
type Of<T extends z.ZodMiniType> = z.infer<T>;

export type Conformance = [
  Same<ChangeChannelInfo, Of<typeof S.ChannelInfoSchema>>,
  Same<DefinitionSummary, Of<typeof S.DefinitionSummarySchema>>,
  Same<FailureSummary, Of<typeof S.FailureSummarySchema>>,
  Same<RuleStatus, Of<typeof S.RuleStatusSchema>>,
  Same<ApprovalItem, Of<typeof S.ApprovalItemSchema>>,
  Same<ApprovalList, Of<typeof S.ApprovalListSchema>>,
  Same<ApprovalAnswer, Of<typeof S.ApprovalAnswerSchema>>,
  Same<RequestCancel, Of<typeof S.RequestCancelSchema>>,
  Same<StreamInfo, Of<typeof S.StreamInfoSchema>>,
  Same<UsageReport, Of<typeof S.UsageReportSchema>>,
  Same<RequestUsageReport, Of<typeof S.RequestUsageReportSchema>>,
  Same<ExportDeletion, Of<typeof S.ExportDeletionSchema>>,
  Same<DeletionResult, Of<typeof S.DeletionResultSchema>>,
];
export const CONFORMS: Conformance = [
  true,
  true,
  true,
  true,
  true,
  true,
  true,
  true,
  true,
  true,
  true,
  true,
  true,
];
