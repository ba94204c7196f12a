/**
 * What `bench:cost` measured before the lean write path (commit 761a4dd: every breadcrumb written in one
 * transaction with its version item and one item per tag; the claim completed inside the answer's transaction),
 * printed beside today's figures. DynamoDB's figures are exact (they depend on the items written, not on the
 * machine); the rest (events, SQS, Lambda) is the reading of an idle run of that commit with
 * `--roundtrips 10 --turns 4 --runs 4`. To reproduce: `git checkout 761a4dd && npm run bench:cost`.
 */
export interface CostReading {
  /** Write units by table and index; `inTransactions`: index units written inside transactions. */
  wru: Record<string, number>;
  inTransactions: number;
  rru: number;
  requests: Record<string, number>;
  /** Dollars per million units for everything but DynamoDB (events, archive, SQS, Lambda). */
  otherDollars: number;
}

export const BEFORE_COMMIT = '761a4dd';

export const BEFORE: Record<'tool round trips' | 'agent turns' | 'workflow runs', CostReading> = {
  'tool round trips': {
    wru: { table: 23, gsi1: 8, gsi3: 4 },
    inTransactions: 12,
    rru: 2,
    requests: { TransactWriteItems: 2, BatchGetItem: 1, PutItem: 1 },
    otherDollars: 2.0 + 0.15 + 1.2 + 0.56 + 0.48,
  },
  'agent turns': {
    wru: { table: 97, gsi1: 46, gsi2: 4, gsi3: 15 },
    inTransactions: 57,
    rru: 17,
    requests: { GetItem: 9, TransactWriteItems: 7, PutItem: 5, BatchGetItem: 4, Query: 2, UpdateItem: 2 },
    otherDollars: 7.0 + 0.91 + 6.0 + 1.9 + 4.45,
  },
  'workflow runs': {
    wru: { table: 179, gsi1: 79, gsi3: 26 },
    inTransactions: 105,
    rru: 25.5,
    requests: { TransactWriteItems: 12, GetItem: 10, BatchGetItem: 7, PutItem: 7, Query: 3 },
    otherDollars: 12.0 + 1.7 + 8.4 + 2.85 + 2.33,
  },
};
