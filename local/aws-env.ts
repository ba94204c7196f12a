/** Credentials and region for local AWS endpoints: DynamoDB Local wants alphanumeric keys, nothing checks them. */
export const LOCAL_REGION = 'us-east-1';
export const LOCAL_ACCOUNT = '000000000000';
export const LOCAL_CREDENTIALS = { accessKeyId: 'local', secretAccessKey: 'local' } as const;

export function localQueueArn(name: string): string {
  return `arn:aws:sqs:${LOCAL_REGION}:${LOCAL_ACCOUNT}:${name}`;
}
