/**
 * Context-builder executor. Triggered by the context-builder queue (events routed by each context.config.v1's
 * rule, compiled from its update_triggers — typically user.message.v1). Reads the config, the trigger and its
 * sources (recent / latest / tagged listings, vector nearest neighbours over stored embeddings); upserts one
 * agent.context.v1 per consumer and session (or writes context.error.v1).
 */
import { createContextBuilderKind } from '#shared/core/context-builder/context-builder-kind.ts';
import { createExecutorHandler } from '../wiring/executor-handler.ts';

export const handler = createExecutorHandler('context-builder', {
  implementation: () => createContextBuilderKind(),
  timeoutEarlyInMillis: 3_000,
});
