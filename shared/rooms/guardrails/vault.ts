/**
 * Placeholders: each masked value gets one placeholder per thread (`[EMAIL_1]`, `[CARD_2]`), the same every time
 * the value comes back, so the model can still refer to it and a tool round or an approval later sees the same
 * names. The map from placeholder to value is kept per thread, sealed with AES-256-GCM (the thread's workspace and
 * id are the authenticated data, so a sealed map moved to another thread does not open), in an item that is no
 * breadcrumb (`#guardrail-vault#<thread>`: the publisher ignores ids with `#`, so it is in no change event, no bus
 * archive and no delta channel) and expires with the thread.
 *
 * Keys (`KeyRing`): under `crumbs dev` a local key (32 random bytes in the stack's data directory, or
 * `CRUMBS_GUARDRAIL_KEY`); on AWS the same interface is to be backed by a KMS data key per workspace (not built
 * yet: see the room's README).
 */
import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';

export interface PlaceholderEntry {
  readonly placeholder: string;
  readonly type: string;
  readonly value: string;
}

export interface PlaceholderMap {
  entries: PlaceholderEntry[];
}

/** Seals and opens a thread's map. */
export interface KeyRing {
  seal(plain: Buffer, aad: string): Promise<string>;
  open(sealed: string, aad: string): Promise<Buffer>;
}

/** Where sealed maps are kept: one per thread, gone when the thread expires. */
export interface VaultStore {
  load(workspace: string, thread: string): Promise<string | undefined>;
  save(workspace: string, thread: string, sealed: string): Promise<void>;
}

/** AES-256-GCM under one 32-byte key: `v1.<iv>.<tag>.<ciphertext>`, base64url. */
export class LocalKeyRing implements KeyRing {
  readonly #key: Buffer;
  constructor(key: Buffer) {
    if (key.length !== 32) throw new Error('a guardrail vault key is 32 bytes');
    this.#key = key;
  }

  static fromBase64(text: string): LocalKeyRing {
    return new LocalKeyRing(Buffer.from(text, 'base64'));
  }

  async seal(plain: Buffer, aad: string): Promise<string> {
    const iv = randomBytes(12);
    const cipher = createCipheriv('aes-256-gcm', this.#key, iv);
    cipher.setAAD(Buffer.from(aad));
    const body = Buffer.concat([cipher.update(plain), cipher.final()]);
    return ['v1', iv, cipher.getAuthTag(), body]
      .map((p) => (typeof p === 'string' ? p : p.toString('base64url')))
      .join('.');
  }

  async open(sealed: string, aad: string): Promise<Buffer> {
    const [version, iv, tag, body] = sealed.split('.');
    if (version !== 'v1' || iv === undefined || tag === undefined || body === undefined) {
      throw new Error('not a sealed guardrail map');
    }
    const decipher = createDecipheriv('aes-256-gcm', this.#key, Buffer.from(iv, 'base64url'));
    decipher.setAAD(Buffer.from(aad));
    decipher.setAuthTag(Buffer.from(tag, 'base64url'));
    return Buffer.concat([decipher.update(Buffer.from(body, 'base64url')), decipher.final()]);
  }
}

/** In memory: unit tests and the CLI's `guardrails test`, which keeps nothing. */
export class MemoryVaultStore implements VaultStore {
  readonly items = new Map<string, string>();
  async load(workspace: string, thread: string): Promise<string | undefined> {
    return this.items.get(`${workspace}/${thread}`);
  }
  async save(workspace: string, thread: string, sealed: string): Promise<void> {
    this.items.set(`${workspace}/${thread}`, sealed);
  }
}

const label = (type: string) =>
  type
    .replace(/^custom:/, '')
    .replace(/[^A-Za-z0-9]+/g, '_')
    .toUpperCase();

/** The placeholders of one thread, as one invocation reads and extends them. */
export class Placeholders {
  #changed = false;
  constructor(private readonly map: PlaceholderMap = { entries: [] }) {}

  get changed(): boolean {
    return this.#changed;
  }

  get entries(): readonly PlaceholderEntry[] {
    return this.map.entries;
  }

  /** The value's placeholder, made on first sight: `[<TYPE>_<n>]`, n counting that type's values in the thread. */
  placeholderFor(type: string, value: string): string {
    const known = this.map.entries.find((e) => e.value === value && e.type === type);
    if (known) return known.placeholder;
    const n = this.map.entries.filter((e) => e.type === type).length + 1;
    const placeholder = `[${label(type)}_${n}]`;
    this.map.entries.push({ placeholder, type, value });
    this.#changed = true;
    return placeholder;
  }

  /** `text` with every known placeholder replaced by its value. */
  unmask(text: string): string {
    let out = text;
    for (const e of this.map.entries) out = out.split(e.placeholder).join(e.value);
    return out;
  }

  toJSON(): PlaceholderMap {
    return this.map;
  }
}

/** Reads and writes a thread's sealed map. */
export class Vault {
  constructor(
    private readonly store: VaultStore,
    private readonly keys: KeyRing,
  ) {}

  async open(workspace: string, thread: string): Promise<Placeholders> {
    const sealed = await this.store.load(workspace, thread);
    if (sealed === undefined) return new Placeholders();
    const plain = await this.keys.open(sealed, `${workspace}/${thread}`);
    return new Placeholders(JSON.parse(plain.toString('utf8')) as PlaceholderMap);
  }

  async keep(workspace: string, thread: string, placeholders: Placeholders): Promise<void> {
    if (!placeholders.changed) return;
    const sealed = await this.keys.seal(
      Buffer.from(JSON.stringify(placeholders.toJSON())),
      `${workspace}/${thread}`,
    );
    await this.store.save(workspace, thread, sealed);
  }
}
