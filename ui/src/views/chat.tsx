/**
 * Chat: writes a `user.message.v1` (what the demo agent's context builder listens for) and follows its thread on
 * the change stream: every hop appears as it happens, and the agent's answer (or its error) ends the turn.
 */
import { useEffect, useRef, useState } from 'preact/hooks';
import type { ChangeEvent } from '#shared/client/api-types.ts';
import type { Api } from '../api.ts';
import { OutcomeBadge } from '../components.tsx';
import { time } from '../format.ts';
import { href } from '../session.ts';

interface Turn {
  id: string;
  message: string;
  steps: ChangeEvent[];
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
    let sent: { id: string };
    try {
      sent = await api.create({
        schema_name: 'user.message.v1',
        title: message.length > 80 ? `${message.slice(0, 79)}…` : message,
        tags: ['user:message', `session:${session}`],
        context: { message, session },
      });
    } catch (err) {
      setError((err as Error).message);
      return;
    }
    setTurns((t) => [...t, { id: sent.id, message, steps: [] }]);
    const controller = new AbortController();
    controllers.current.push(controller);
    void api.follow(
      { thread: sent.id, view: 'full', backlog: '100', wait: '20' },
      (events) =>
        setTurns((all) =>
          all.map((turn) => {
            if (turn.id !== sent.id) return turn;
            const known = new Set(turn.steps.map((s) => `${s.id}@${s.version}`));
            const steps = [
              ...turn.steps,
              ...events.filter((e) => !known.has(`${e.id}@${e.version}`) && e.id !== sent.id),
            ];
            const final = steps.find((s) => FINAL.includes(s.schema_name));
            if (!final) return { ...turn, steps };
            controller.abort();
            const c = (final.record?.context ?? {}) as Record<string, unknown>;
            return final.schema_name === 'agent.response.v1'
              ? { ...turn, steps, answer: String(c.message ?? c.text ?? JSON.stringify(c)) }
              : { ...turn, steps, failed: String(c.error ?? c.reason ?? final.schema_name) };
          }),
        ),
      controller.signal,
      (e) => setError(e.message),
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
            {turn.answer === undefined && turn.failed === undefined && (
              <div class="muted typing">waiting for the agent…</div>
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
