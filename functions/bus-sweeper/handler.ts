/**
 * Bus sweeper. Triggered by CloudFormation: a custom resource per bus of the stateful stack. On Delete (the stage
 * destroyed, or the bus leaving a shrinking pool) it removes the rule manager's compiled rules from that bus, so the
 * bus can be deleted; Create and Update do nothing. Reads and deletes rules named `crumbs-def-*` on the crumbs buses
 * only; answers CloudFormation through the event's response URL (`shared/core/rules/bus-sweeper.ts`).
 */

import middy from '@middy/core';
import type { Context } from 'aws-lambda';
import { EventBridgeRuleRegistry } from '#shared/adapters/eventbridge/rule-registry.ts';
import {
  type CustomResourceEvent,
  handleSweepEvent,
  sendCustomResourceResponse,
} from '#shared/core/rules/bus-sweeper.ts';
import { instrumented, powertools } from '../wiring/powertools.ts';

const pt = powertools('crumbs-bus-sweeper', []);

export const handler = instrumented(
  middy(async (event: CustomResourceEvent, _context: Context): Promise<void> => {
    const response = await handleSweepEvent(event, (bus) => new EventBridgeRuleRegistry(bus));
    pt.logger.info('custom resource answered', {
      requestType: event.RequestType,
      status: response.Status,
      reason: response.Reason,
      removed: response.Data?.Removed,
    });
    await sendCustomResourceResponse(event.ResponseURL, response);
  }),
  pt,
);
