import { localStore, uniqueWorkspace } from '../support/local.ts';
import { describeStoreContract } from '../support/store-contract.ts';

describeStoreContract('DynamoDB Local', () => ({
  store: localStore(),
  workspace: uniqueWorkspace('contract'),
}));
