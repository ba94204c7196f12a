/**
 * Structured output (a JSON answer matching `LlmRequest.responseSchema`) for providers that cannot enforce a
 * schema: the schema goes into the system prompt and the JSON object is taken out of the reply. The caller still
 * validates the text against the schema, so a model that ignores the instruction surfaces as a clear error there.
 */

/** The system-prompt addition asking for JSON matching `schema`. OpenAI's `json_object` mode also needs the word. */
export function withSchemaInstruction(system: string, schema: Record<string, unknown>): string {
  const instruction =
    'Answer with only a JSON object that matches this JSON Schema, without markdown fences or any other text:\n' +
    JSON.stringify(schema);
  return system.trim() === '' ? instruction : `${system}\n\n${instruction}`;
}

/**
 * The JSON object in a reply. Models asked by prompt alone sometimes wrap the object in a fence or a sentence;
 * the object is returned when one parses, the reply unchanged otherwise (the caller reports it).
 */
export function jsonText(text: string): string {
  const trimmed = text.trim();
  const candidates = [
    trimmed,
    /```(?:json)?\s*([\s\S]*?)```/i.exec(trimmed)?.[1]?.trim(),
    trimmed.slice(trimmed.indexOf('{'), trimmed.lastIndexOf('}') + 1),
  ];
  for (const candidate of candidates) {
    if (!candidate) continue;
    try {
      JSON.parse(candidate);
      return candidate;
    } catch {
      // Not this one: the next candidate is a narrower cut of the same reply.
    }
  }
  return text;
}

/**
 * Whether OpenAI's strict structured outputs accept the schema's shape: every object closes its properties
 * (`additionalProperties: false`) and requires all of them. Strict mode guarantees the shape but answers 400 to
 * any other schema, and definitions written for crumbs usually leave fields optional, so strict is asked only
 * for schemas already written for it.
 */
export function fitsStrictMode(schema: unknown): boolean {
  if (!isRecord(schema)) return true;
  const properties = isRecord(schema.properties) ? schema.properties : undefined;
  if (properties !== undefined || schema.type === 'object') {
    const required = Array.isArray(schema.required) ? schema.required : [];
    if (schema.additionalProperties !== false) return false;
    if (!Object.keys(properties ?? {}).every((key) => required.includes(key))) return false;
  }
  const children = [
    ...Object.values(properties ?? {}),
    schema.items,
    ...(Array.isArray(schema.anyOf) ? schema.anyOf : []),
    ...Object.values(isRecord(schema.$defs) ? schema.$defs : {}),
    ...Object.values(isRecord(schema.definitions) ? schema.definitions : {}),
  ];
  return children.every(fitsStrictMode);
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}
