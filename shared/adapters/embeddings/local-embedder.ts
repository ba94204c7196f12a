/**
 * A deterministic local embedder for offline use (the local stack, tests): hashed bag of words plus character
 * trigrams, folded into 256 dimensions with a sign hash and L2-normalized. It captures lexical overlap, not
 * meaning — enough for "find the earlier message that mentioned the API key", with no model and no network.
 */
import { createHash } from 'node:crypto';
import type { Embedder } from '#shared/ports/embeddings.ts';

export const LOCAL_EMBEDDING_DIMENSIONS = 256;

const STOP_WORDS = new Set([
  'the',
  'a',
  'an',
  'is',
  'of',
  'to',
  'and',
  'or',
  'in',
  'on',
  'it',
  'what',
  'was',
  'that',
]);

export class LocalEmbedder implements Embedder {
  readonly dimensions = LOCAL_EMBEDDING_DIMENSIONS;
  readonly model = `local/hashed-v1@${LOCAL_EMBEDDING_DIMENSIONS}`;

  async embed(texts: readonly string[]): Promise<number[][]> {
    return texts.map((t) => embedText(t, this.dimensions));
  }
}

export function embedText(text: string, dimensions = LOCAL_EMBEDDING_DIMENSIONS): number[] {
  const v = new Array<number>(dimensions).fill(0);
  const normalized = text.toLowerCase().normalize('NFKC');
  const words = normalized.match(/[\p{L}\p{N}]+/gu) ?? [];
  for (const word of words) {
    // Words weigh more than their trigrams; stop words barely count.
    add(v, `w:${word}`, STOP_WORDS.has(word) ? 0.2 : 2);
    const padded = ` ${word} `;
    for (let i = 0; i + 3 <= padded.length; i++) add(v, `t:${padded.slice(i, i + 3)}`, 0.5);
  }
  const norm = Math.sqrt(v.reduce((s, x) => s + x * x, 0));
  return norm === 0 ? v : v.map((x) => x / norm);
}

function add(v: number[], feature: string, weight: number): void {
  const h = createHash('sha1').update(feature).digest();
  const index = h.readUInt32BE(0) % v.length;
  const sign = (h[4] ?? 0) & 1 ? 1 : -1;
  v[index] = (v[index] ?? 0) + sign * weight;
}
