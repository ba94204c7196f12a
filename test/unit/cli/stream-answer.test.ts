/**
 * When `crumbs chat` and `crumbs ask` stream: on a terminal by default, on a pipe only with `--stream`, never with
 * `--no-stream` or `--json`; both flags at once is a usage error (exit 2) before anything is written.
 */
import { describe, expect, it } from 'vitest';
import { main } from '#cli/main.ts';
import { streamModeOf } from '#cli/stream-answer.ts';

const io = (terminal: boolean) => ({
  stdout: () => {},
  stderr: () => {},
  env: {},
  stdoutIsTerminal: terminal,
});

describe('streamModeOf', () => {
  it('streams on a terminal, appends on a pipe only when asked, and never for --no-stream or --json', () => {
    expect(streamModeOf({}, io(true), false)).toBe('terminal');
    expect(streamModeOf({}, io(false), false)).toBe('off');
    expect(streamModeOf({ stream: true }, io(false), false)).toBe('append');
    expect(streamModeOf({ 'no-stream': true }, io(true), false)).toBe('off');
    expect(streamModeOf({}, io(true), true)).toBe('off');
  });

  it('refuses --stream with --no-stream before writing anything', async () => {
    let err = '';
    const code = await main(['chat', 'hi', '--stream', '--no-stream', '--endpoint', 'http://127.0.0.1:1'], {
      stdout: () => {},
      stderr: (s) => {
        err += s;
      },
      env: {},
    });
    expect(code).toBe(2);
    expect(err).toContain('--stream and --no-stream exclude each other');
  });
});
