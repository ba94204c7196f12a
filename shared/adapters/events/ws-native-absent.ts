/**
 * What a bundle gets for `bufferutil` and `utf-8-validate`, the native add-ons `ws` tries to load inside a
 * try/catch and does without (its pure-JavaScript masking and UTF-8 check): importing this throws, as a missing
 * package would, so no bundle leaves them as imports the runtime cannot resolve (`infra/constructs/bundling-options.ts`).
 */
throw new Error('native WebSocket add-ons are not bundled: ws uses its JavaScript code');
