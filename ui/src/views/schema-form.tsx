/**
 * A form generated from a JSON Schema, for approving a human step: an object's properties become fields (text,
 * number, checkbox, select for `enum`), anything else a JSON text area. It reports the value as it is edited.
 */
import { useEffect, useState } from 'preact/hooks';

interface Schema {
  type?: string | string[];
  properties?: Record<string, Schema>;
  required?: string[];
  enum?: unknown[];
  title?: string;
  description?: string;
  default?: unknown;
}

export function SchemaForm({ schema, onChange }: { schema: unknown; onChange: (value: unknown) => void }) {
  const s = (schema ?? {}) as Schema;
  if (s.type === 'object' && s.properties) return <ObjectForm schema={s} onChange={onChange} />;
  return <JsonField label="input (JSON)" onChange={onChange} />;
}

function ObjectForm({ schema, onChange }: { schema: Schema; onChange: (value: unknown) => void }) {
  const props = Object.entries(schema.properties ?? {});
  const [value, setValue] = useState<Record<string, unknown>>(() =>
    Object.fromEntries(
      props.flatMap(([k, p]) =>
        p.default !== undefined ? [[k, p.default]] : p.type === 'boolean' ? [[k, false]] : [],
      ),
    ),
  );
  useEffect(() => onChange(value), [value]);
  const set = (key: string, v: unknown) => {
    const next = { ...value };
    if (v === undefined) delete next[key];
    else next[key] = v;
    setValue(next);
  };
  return (
    <fieldset class="schema-form">
      {props.map(([key, p]) => {
        const label = `${p.title ?? key}${schema.required?.includes(key) ? ' *' : ''}`;
        const type = Array.isArray(p.type) ? p.type[0] : p.type;
        if (p.enum) {
          return (
            <label key={key}>
              {label}
              <select name={key} onChange={(e) => set(key, p.enum?.[Number(e.currentTarget.value)])}>
                <option value="">—</option>
                {p.enum.map((option, i) => (
                  <option key={String(option)} value={i}>
                    {String(option)}
                  </option>
                ))}
              </select>
            </label>
          );
        }
        if (type === 'boolean') {
          return (
            <label key={key} class="check">
              <input
                type="checkbox"
                name={key}
                checked={value[key] === true}
                onChange={(e) => set(key, e.currentTarget.checked)}
              />
              {label}
            </label>
          );
        }
        if (type === 'number' || type === 'integer') {
          return (
            <label key={key}>
              {label}
              <input
                type="number"
                name={key}
                step={type === 'integer' ? 1 : 'any'}
                onInput={(e) =>
                  set(key, e.currentTarget.value === '' ? undefined : Number(e.currentTarget.value))
                }
              />
            </label>
          );
        }
        if (type === 'string') {
          return (
            <label key={key}>
              {label}
              <input name={key} onInput={(e) => set(key, e.currentTarget.value || undefined)} />
            </label>
          );
        }
        return <JsonField key={key} label={label} onChange={(v) => set(key, v)} />;
      })}
    </fieldset>
  );
}

function JsonField({ label, onChange }: { label: string; onChange: (value: unknown) => void }) {
  const [bad, setBad] = useState(false);
  return (
    <label>
      {label}
      <textarea
        rows={3}
        onInput={(e) => {
          const text = e.currentTarget.value.trim();
          if (text === '') {
            setBad(false);
            onChange(undefined);
            return;
          }
          try {
            onChange(JSON.parse(text));
            setBad(false);
          } catch {
            setBad(true);
          }
        }}
      />
      {bad && <span class="error">not valid JSON yet</span>}
    </label>
  );
}
