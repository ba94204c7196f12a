/**
 * The CLI's client is the package's typed client, `crumbs/client` (`shared/client/crumbs-client.ts`); this module
 * only keeps the old import path working for scripts and tests written against it.
 */
export * from '#shared/client/crumbs-client.ts';
