/**
 * Chat: writes a `user.message.v1` (what the demo agent's context builder listens for) and follows its thread on
 * the change stream: every hop appears as it happens, and the agent's answer (or its error) ends the turn. The
 * answer streams in as the model writes it: the view subscribes to the message's delta channel before writing it
 * (`stream_id`), shows the text as it comes with a Stop button (the request's cancel), and puts the stored answer
 * in its place once it is written.
 */
import { useEffect, useRef, useState } from 'preact/hooks';
import type { ChangeEvent } from '#shared/client/api-types.ts';
import type { DeltaEvent } from '#shared/core/streaming/events.ts';
import type { Api } from '../api.ts';
import { OutcomeBadge } from '../components.tsx';
import { time } from '../format.ts';
import { href } from '../session.ts';

interface Turn {
  /** The message's id once written; the stream id until then. */
  id: string;
  message: string;
  steps: ChangeEvent[];
  /** The answer's text as streamed so far (a preview: the stored answer replaces it). */
  streaming?: string;
  /** Why the streamed text started over (a tool round, a retried call). */
  streamNote?: string;
  stopping?: boolean;
  answer?: string;
  failed?: string;
}

const FINAL = ['agent.response.v1', 'agent.error.v1', 'context.error.v1', 'system.loop_stopped.v1'];

export function ChatView({ api }: { api: Api }) {
  const [turns, setTurns] = useState<Turn[]>([]);
  const [text, setText] = useState('');
  const [error, setError] = useState<string>();
  const controllers = useRef<AbortController[]>([]);
  useEffect(
    () => () => {
      for (const c of controllers.current) c.abort();
    },
    [],
  );

  const send = async (message: string) => {
    setError(undefined);
    const session = 'ui';
    const streamId = crypto.randomUUID();
    let sent: { id: string } | undefined;
    const update = (change: (turn: Turn) => Turn) =>
      setTurns((all) =>
        all.map((turn) => (turn.id === streamId || turn.id === sent?.id ? change(turn) : turn)),
      );
    setTurns((t) => [...t, { id: streamId, message, steps: [] }]);
    // Subscribed before the message is written, so no word is missed; without a channel the answer just arrives.
    const live = await api
      .streamInfo(streamId)
      .then((info) =>
        info === undefined
          ? undefined
          : api.subscribe(info, (event: DeltaEvent) =>
              update((turn) =>
                event.type === 'delta'
                  ? { ...turn, streaming: (turn.streaming ?? '') + event.text, streamNote: undefined }
                  : event.type === 'reset'
                    ? { ...turn, streaming: '', streamNote: event.reason || turn.streamNote }
                    : turn,
              ),
            ),
      )
      .catch(() => undefined);
    try {
      sent = await api.create({
        schema_name: 'user.message.v1',
        title: message.length > 80 ? `${message.slice(0, 79)}…` : message,
        tags: ['user:message', `session:${session}`],
        context: { message, session, ...(live !== undefined ? { stream_id: streamId } : {}) },
      });
    } catch (err) {
      live?.close();
      setTurns((all) => all.filter((turn) => turn.id !== streamId));
      setError((err as Error).message);
      return;
    }
    const written = sent;
    setTurns((all) => all.map((turn) => (turn.id === streamId ? { ...turn, id: written.id } : turn)));
    void live?.done.finally(() => live.close());
    const controller = new AbortController();
    controllers.current.push(controller);
    let ended = false;
    // The answer (or error) that ends the turn: the change names it, the record says what it is.
    const finish = async (final: ChangeEvent) => {
      controller.abort();
      live?.close();
      let c: Record<string, unknown> = {};
      try {
        c = (await api.full(final.id)).context;
      } catch (err) {
        setError((err as Error).message);
      }
      const ends = (turn: Turn): Turn =>
        final.schema_name === 'agent.response.v1' && c.status !== 'cancelled'
          ? { ...turn, answer: String(c.message ?? c.text ?? JSON.stringify(c)) }
          : { ...turn, failed: String(c.error ?? c.reason ?? c.message ?? final.schema_name) };
      setTurns((all) => all.map((turn) => (turn.id === written.id ? ends(turn) : turn)));
    };
    void api.follow(
      { thread: written.id, backlog: '100' },
      (events) => {
        const final = events.find((e) => FINAL.includes(e.schema_name));
        setTurns((all) =>
          all.map((turn) => {
            if (turn.id !== written.id) return turn;
            const known = new Set(turn.steps.map((s) => `${s.id}@${s.version}`));
            const steps = [
              ...turn.steps,
              ...events.filter((e) => !known.has(`${e.id}@${e.version}`) && e.id !== written.id),
            ];
            return { ...turn, steps };
          }),
        );
        if (final && !ended) {
          ended = true;
          void finish(final);
        }
      },
      controller.signal,
      (e) => setError(e?.message),
      // While the turn waits for its answer, a lost push is found within seconds, not never.
      { exact: true },
    );
  };

  return (
    <section class="chat">
      <div class="heading">
        <h2>Chat</h2>
        <span class="muted">messages go to the agents of {api.workspace} as user.message.v1</span>
      </div>
      <div class="transcript">
        {turns.length === 0 && <p class="muted">Ask something, e.g. “what is 17*23?”.</p>}
        {turns.map((turn) => (
          <div key={turn.id} class="turn" data-turn={turn.id}>
            <div class="bubble user">{turn.message}</div>
            <ol class="steps">
              {turn.steps.map((s) => (
                <li key={`${s.id}@${s.version}`} class={s.outcome !== 'ok' ? 'error' : ''}>
                  <span class="mono muted">{time(s.updated_at)}</span>{' '}
                  <span class="mono">{s.schema_name}</span>{' '}
                  <OutcomeBadge outcome={s.outcome} status={s.status} />{' '}
                  <span class="muted">{s.updated_by}</span> {s.title}
                </li>
              ))}
            </ol>
            {turn.answer !== undefined && (
              <div class="bubble agent" data-answer>
                {turn.answer}
              </div>
            )}
            {turn.failed !== undefined && <div class="bubble agent error">{turn.failed}</div>}
            {turn.answer === undefined && turn.failed === undefined && turn.streaming !== undefined && (
              <div class="bubble agent streaming" data-streaming>
                {turn.streaming}
                {turn.streamNote !== undefined && <div class="muted">… {turn.streamNote}</div>}
              </div>
            )}
            {turn.answer === undefined && turn.failed === undefined && (
              <div class="muted typing">
                {turn.streaming === undefined ? 'waiting for the agent…' : 'the agent is writing…'}
                {turn.streaming !== undefined && (
                  <button
                    type="button"
                    class="stop"
                    disabled={turn.stopping === true}
                    onClick={() => {
                      setTurns((all) => all.map((t) => (t.id === turn.id ? { ...t, stopping: true } : t)));
                      api.cancelRequest(turn.id).catch((e: Error) => setError(e.message));
                    }}
                  >
                    {turn.stopping === true ? 'Stopping…' : 'Stop'}
                  </button>
                )}
              </div>
            )}
            <a class="thread-link" href={href({ view: 'thread', id: turn.id })}>
              open thread
            </a>
          </div>
        ))}
      </div>
      {error && <p class="error">{error}</p>}
      <form
        class="composer"
        onSubmit={(e) => {
          e.preventDefault();
          const message = text.trim();
          if (!message) return;
          setText('');
          void send(message);
        }}
      >
        <input
          name="message"
          placeholder="Message"
          autoComplete="off"
          value={text}
          onInput={(e) => setText(e.currentTarget.value)}
        />
        <button type="submit">Send</button>
      </form>
    </section>
  );
}
