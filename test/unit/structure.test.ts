/**
 * The house's floors, drawn from the code's own imports: a module may import its own room and the floors below it,
 * never one above. Rooms are the folders of `shared/` (and of `shared/core/`), then the deployables built on them.
 * `shared/core` holds rooms only, no loose files. A new room takes a floor here, so its place is a decision.
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, normalize, relative } from 'node:path';
import { describe, expect, it } from 'vitest';

const ROOT = normalize(join(import.meta.dirname, '../..'));

/** Bottom to top. Rooms on one floor may not import each other. */
const FLOORS: readonly (readonly string[])[] = [
  ['shared/topology'],
  ['shared/domain'],
  ['shared/config'],
  ['shared/ports'],
  // The attachments room is below the adapters: the breadcrumb store spills large contexts through it.
  ['shared/rooms/attachments'],
  ['shared/adapters'],
  ['shared/routing'],
  ['shared/tools'],
  // The guardrails room implements the check points' port; its routes are the API's.
  ['shared/rooms/guardrails'],
  ['shared/core/stream'],
  ['shared/core/streaming'],
  ['shared/core/model-calls'],
  ['shared/core/executor'],
  ['shared/core/context-builder', 'shared/core/tools'],
  ['shared/core/orchestration'],
  ['shared/core/rules'],
  ['shared/core/agents'],
  ['shared/core/front-door'],
  ['shared/core/api'],
  ['shared/core/mcp', 'shared/core/a2a'],
  // Rooms (DESIGN.md "New capabilities land as rooms"), each a room of its own: the memory room is built on the core
  // and registered by the functions.
  ['shared/rooms/memory'],
  ['shared/client'],
  ['functions/wiring'],
  ['functions'],
  ['ui'],
  ['local'],
  ['cli'],
];

function roomOf(file: string): string | undefined {
  const parts = file.split('/');
  if (parts[0] === 'shared') {
    // Each folder of shared/rooms/ is a room of its own (DESIGN.md "New capabilities land as rooms"). A room's
    // `contract.ts` (its routes' entries in the route table) is the API's, which the route table takes in; so are
    // the `routes.ts` of a room below the API, which the API registers itself. A room above the API hands its routes
    // to the API through `roomRoutes` and keeps them.
    if (parts[1] === 'rooms' && parts.length > 3) {
      const room = `shared/rooms/${parts[2]}`;
      if (parts[3] === 'contract.ts') return 'shared/core/api';
      if (parts[3] === 'routes.ts' && floorOf(room) < floorOf('shared/core/api')) return 'shared/core/api';
      return room;
    }
    if (parts[1] === 'core') return parts.length > 3 ? `shared/core/${parts[2]}` : 'shared/core';
    return `shared/${(parts[1] ?? '').replace(/\.ts$/, '')}`;
  }
  if (parts[0] === 'functions') return parts[1] === 'wiring' ? 'functions/wiring' : 'functions';
  if (parts[0] === 'local' || parts[0] === 'cli' || parts[0] === 'ui') return parts[0];
  return undefined;
}

function floorOf(room: string): number {
  return FLOORS.findIndex((floor) => floor.includes(room));
}

function sources(dir: string): string[] {
  const out: string[] = [];
  for (const name of readdirSync(join(ROOT, dir))) {
    if (name === 'node_modules' || name === 'dist' || name.startsWith('.')) continue;
    const path = join(dir, name);
    if (statSync(join(ROOT, path)).isDirectory()) out.push(...sources(path));
    else if (/\.tsx?$/.test(name) && !/\.d\.ts$/.test(name)) out.push(path);
  }
  return out;
}

const ALIASES: Record<string, string> = {
  '#shared/': 'shared/',
  '#functions/': 'functions/',
  '#local/': 'local/',
  '#cli/': 'cli/',
  '#infra/': 'infra/',
};

function importsOf(file: string): string[] {
  const text = readFileSync(join(ROOT, file), 'utf8');
  const targets: string[] = [];
  for (const match of text.matchAll(
    /(?:^|\s)(?:import|export)\s[^'";]*?from\s+['"]([^'"]+)['"]|import\(\s*['"]([^'"]+)['"]\s*\)/gm,
  )) {
    const spec = match[1] ?? match[2] ?? '';
    const alias = Object.keys(ALIASES).find((a) => spec.startsWith(a));
    if (alias) targets.push(ALIASES[alias] + spec.slice(alias.length));
    else if (spec.startsWith('.')) targets.push(relative(ROOT, join(ROOT, dirname(file), spec)));
  }
  return targets;
}

const FILES = ['shared', 'functions', 'local', 'cli', 'ui/src'].flatMap(sources);

describe('The structure drawn from the imports', () => {
  it('gives every room of shared/, functions/, local/, cli/ and ui/ a floor', () => {
    const unplaced = [...new Set(FILES.map((f) => roomOf(f) ?? f))].filter((room) => floorOf(room) < 0);
    expect(unplaced).toEqual([]);
  });

  it('has no import running up a floor, nor across rooms of one floor', () => {
    const upward: string[] = [];
    for (const file of FILES) {
      const from = roomOf(file);
      if (!from) continue;
      for (const target of importsOf(file)) {
        const to = roomOf(target);
        if (!to || to === from) continue;
        if (floorOf(to) >= floorOf(from)) upward.push(`${file} → ${target}`);
      }
    }
    expect(upward).toEqual([]);
  });

  it('keeps no loose files at the top of shared/core', () => {
    const loose = readdirSync(join(ROOT, 'shared/core')).filter((name) => /\.ts$/.test(name));
    expect(loose).toEqual([]);
  });
});
