/**
 * Credentials by reference (`secret_ref` in a definition), each workspace's own: a Secrets Manager secret under
 * `crumbs/agents/<workspace>/` on AWS, the workspace's entry of the local mapping in `crumbs dev`. Definitions
 * never hold the value itself, and no ref reaches another workspace's secrets (`shared/domain/secret-refs.ts`).
 */

export interface SecretSource {
  /**
   * The value of `workspace`'s secret `name`; NonRetriableError naming the ref when the name could reach outside
   * the workspace or there is no such secret.
   */
  secret(workspace: string, name: string): Promise<string>;
  /** Whether `workspace` has a secret `name`, never reading its value (the rule manager's check). */
  has(workspace: string, name: string): Promise<boolean>;
  /** Where `name` of `workspace` is looked up, for messages (`the Secrets Manager secret crumbs/agents/ws/x`). */
  whereIs(workspace: string, name: string): string;
}
