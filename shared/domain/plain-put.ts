/**
 * A plain put: an item a person wrote to the table directly (a console edit, `aws dynamodb put-item`), as the stream
 * publisher adopts it into a breadcrumb. The store's `adoptPlainPut` takes this shape; the publisher builds it.
 */

import type { CreateBreadcrumbSchema } from './breadcrumb.ts';
import type * as z from './zod.ts';

export interface PlainPut {
  id: string;
  workspace: string;
  schema_name: string;
  title: string;
  tags: string[];
  context: Record<string, unknown>;
  llm_hints?: z.output<typeof CreateBreadcrumbSchema>['llm_hints'];
  expires_at?: number;
  /** The writer: the item's `created_by` when it names a person, else `PLAIN_PUT_PRINCIPAL`. */
  created_by: string;
  /** A `created_by` the item named that is not a person's (`system:rule-manager`), kept as a note. */
  claimed_by?: string;
}
