/**
 * The memory room's protocol is data on the domain floor (`shared/domain/memory.ts`, beside the other definitions,
 * which the rule manager and the change events read); the room's modules import it from here.
 */
export * from '#shared/domain/memory.ts';
