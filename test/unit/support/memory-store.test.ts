import { randomBytes } from 'node:crypto';
import { InMemoryBreadcrumbStore } from '../../support/memory/breadcrumb-store.ts';
import { describeStoreContract } from '../../support/store-contract.ts';

describeStoreContract('in memory', () => ({
  store: new InMemoryBreadcrumbStore(),
  workspace: `mem-${randomBytes(4).toString('hex')}`,
}));
