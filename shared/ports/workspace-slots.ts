/** A workspace's share of one executor function (`shared/core/executor/workspace-slots.ts` says why). */
/** The slots of (workspace, executor function); DynamoDB: `shared/adapters/dynamodb/workspace-slots.ts`. */
export interface WorkspaceSlots {
  /** Takes one of `cap` slots for `holder` until `until` (ms); false when `cap` live holders have them. */
  take(workspace: string, holder: string, until: number, cap: number, now: number): Promise<boolean>;
  give(workspace: string, holder: string): Promise<void>;
}
