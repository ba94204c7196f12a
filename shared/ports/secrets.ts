/**
 * Credentials by reference (`secret_ref` in a definition): a Secrets Manager secret on AWS, an environment
 * variable locally. Definitions never hold the value itself.
 */

export interface SecretSource {
  /** The secret's value; throws NonRetriableError naming the reference when there is none. */
  secret(ref: string): Promise<string>;
}
