/**
 * The memory room's schema names, in a module that imports nothing: the change-event module (which the selector
 * and definition modules load) reads one of them, and must not load the memory schemas to do so.
 */
export const MEMORY_DEF_SCHEMA = 'memory.def.v1';
export const MEMORY_RECORD_SCHEMA = 'memory.record.v1';
export const MEMORY_EXTRACT_SCHEMA = 'memory.extract.v1';
export const MEMORY_EXTRACTION_SCHEMA = 'memory.extraction.v1';
export const MEMORY_ERROR_SCHEMA = 'memory.error.v1';
