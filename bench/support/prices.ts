/**
 * The price table `bench:cost` turns measured units into dollars with. Region us-east-1, list prices (no free tier,
 * no savings plans), as published on the pages named beside each price. Recorded 2026-11-24 from the AWS pricing
 * pages as last published (the benchmark machine has no internet access: check the pages before quoting a total).
 */

export const PRICES = {
  region: 'us-east-1',
  recorded: '2026-11-24',
  dynamodb: {
    source: 'https://aws.amazon.com/dynamodb/pricing/on-demand/',
    /** On-demand, Standard table class, per write request unit (1 KB; 2 per KB in a transaction). */
    writeRequestUnit: 0.625 / 1e6,
    /** On-demand, Standard table class, per read request unit (4 KB strongly consistent, 8 KB eventually). */
    readRequestUnit: 0.125 / 1e6,
    /**
     * DynamoDB Streams read request units ($0.02 per 100,000). GetRecords calls made by a Lambda event source
     * mapping (the publisher's trigger) are not charged, so the benchmark prices them at 0 and prints them.
     */
    streamsReadRequestUnit: 0.02 / 1e5,
  },
  eventbridge: {
    source: 'https://aws.amazon.com/eventbridge/pricing/',
    /** Custom events put on an event bus, per 64 KB chunk. Delivery to SQS targets by rules is not charged. */
    customEvent: 1.0 / 1e6,
    /** Event archive: events processed into an archive, per GB (the crumbs bus archives every event). */
    archiveProcessedGb: 0.1,
    /** EventBridge Scheduler, per scheduled invocation (API calls are free). */
    schedulerInvocation: 1.0 / 1e6,
  },
  sqs: {
    source: 'https://aws.amazon.com/sqs/pricing/',
    /** Standard queue requests, per 64 KB chunk of a request's payload (Send, Receive, Delete, …). */
    request: 0.4 / 1e6,
  },
  appsyncEvents: {
    /*
     * Checked again 2026-12 with the search tool: the AWS Price List's AWSAppSync offer ("$1 per million Event API
     * operations", usage type EventAPI-Operation) and AWS's re:Invent 2024 talk FWM302 ("$1 per million API
     * operations", no limit on connections); real-time connection minutes at $0.08 per million ($0.00000008 a
     * minute) as AppSync prices them.
     */
    source:
      'https://aws.amazon.com/appsync/pricing/ (AWS Price List, AWSAppSync: "$1 per million Event API operations")',
    /**
     * Per Event API operation: each event published (inbound) and each event delivered to a subscriber
     * (outbound) is one, metered in 5 KB increments; a connect and a subscribe are one each.
     */
    operation: 1.0 / 1e6,
    /** Per minute a client stays connected. */
    connectionMinute: 0.08 / 1e6,
    /** The size an operation is metered in. */
    meteredBytes: 5 * 1024,
  },
  apiGateway: {
    source: 'https://aws.amazon.com/api-gateway/pricing/',
    /** HTTP API requests, first 300 million a month, per request (the API crumbs serves today). */
    httpApiRequest: 1.0 / 1e6,
    /** REST API requests, first 333 million a month, per request. */
    restApiRequest: 3.5 / 1e6,
  },
  lambda: {
    source: 'https://aws.amazon.com/lambda/pricing/',
    /** Per request (invocation). */
    request: 0.2 / 1e6,
    /** Arm (Graviton2) duration, first pricing tier, per GB-second (billed per 1 ms, at the configured memory). */
    armGbSecond: 0.0000133334,
  },
} as const;
