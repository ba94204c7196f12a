/**
 * Attachments reach the model as the provider takes them, checked before the call: a Bedrock request (the SDK
 * client mocked) gets image and document blocks — bytes, or `s3Location` for Amazon Nova — and a scripted
 * OpenAI-compatible server gets image, audio and file parts. Over a limit nothing is sent.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { BedrockRuntimeClient, ConverseCommand } from '@aws-sdk/client-bedrock-runtime';
import { mockClient } from 'aws-sdk-client-mock';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { LlmRouter } from '#shared/adapters/llm/llm-router.ts';
import { NonRetriableError } from '#shared/domain/errors.ts';
import type { LlmAttachment, LlmRequest } from '#shared/ports/llm.ts';
import {
  type AttachmentSource,
  attachmentsOfContext,
  bucketUri,
  converseDocumentName,
  imageSize,
  KEEP_INLINE_IMAGES,
  withAttachmentData,
} from '#shared/rooms/attachments/model-input.ts';
import { attachmentId, sha256Of } from '#shared/rooms/attachments/reference.ts';
import { pdf, png } from '../../../support/attachment-files.ts';

const bedrock = mockClient(BedrockRuntimeClient);
const WS = 'team';

const files = new Map<string, Uint8Array>();
function file(bytes: Uint8Array, media_type: string, name: string): LlmAttachment {
  const sha256 = sha256Of(bytes);
  files.set(`${WS}/${attachmentId(sha256)}`, bytes);
  return { ref: { id: attachmentId(sha256), media_type, bytes: bytes.byteLength, sha256, name } };
}
const reads: string[] = [];
const source: AttachmentSource = {
  async read(workspace, id) {
    reads.push(`${workspace}/${id}`);
    const bytes = files.get(`${workspace}/${id}`);
    if (!bytes) throw new Error(`no ${id} in ${workspace}`);
    return bytes;
  },
  s3Uri: bucketUri('crumbs-blobs-prod'),
};

let server: Server;
let baseUrl: string;
const received: Record<string, unknown>[] = [];

beforeAll(async () => {
  server = createServer((req, res) => {
    let body = '';
    req.on('data', (c) => {
      body += c;
    });
    req.on('end', () => {
      received.push(JSON.parse(body) as Record<string, unknown>);
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(
        JSON.stringify({
          id: 'c1',
          object: 'chat.completion',
          created: 1,
          model: 'vision',
          choices: [
            { index: 0, message: { role: 'assistant', content: 'a red square' }, finish_reason: 'stop' },
          ],
          usage: { prompt_tokens: 1105, completion_tokens: 4, total_tokens: 1109 },
        }),
      );
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`;
});
afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));
beforeEach(() => {
  bedrock.reset();
  bedrock.on(ConverseCommand).resolves({
    output: { message: { role: 'assistant', content: [{ text: 'seen' }] } },
    stopReason: 'end_turn',
    usage: { inputTokens: 1650, outputTokens: 2, totalTokens: 1652 },
  });
  received.length = 0;
  reads.length = 0;
});

function llm() {
  const router = new LlmRouter({
    env: { AWS_REGION: 'eu-west-1', OPENAI_COMPATIBLE_BASE_URL: baseUrl },
    bedrockClient: new BedrockRuntimeClient({}),
    maxRetries: 0,
  });
  return withAttachmentData(router, source, () => WS);
}

const ask = (model: string, attachments: LlmAttachment[], content = 'what is in these?'): LlmRequest => ({
  model,
  system: 's',
  messages: [{ role: 'user', content, attachments }],
});

describe('attachments in model calls', () => {
  it('sends an image as bytes to a Bedrock model, and a PDF as a named document beside a text block', async () => {
    const image = png(8, 8, 1);
    const report = pdf('numbers');
    const out = await llm().generate(
      ask('bedrock/anthropic.claude-3-5-sonnet-20240620-v1:0', [
        file(image, 'image/png', 'shot.png'),
        file(report, 'application/pdf', 'Q3 report (final)!.v2.pdf'),
      ]),
    );
    expect(out.usage.inputTokens).toBe(1650);
    const input = bedrock.commandCalls(ConverseCommand)[0]!.args[0].input;
    const content = input.messages![0]!.content!;
    expect(content[0]).toEqual({ image: { format: 'png', source: { bytes: image } } });
    expect(content[1]).toEqual({
      document: { format: 'pdf', name: 'Q3 report (final) v2', source: { bytes: report } },
    });
    expect(content[2]).toEqual({ text: 'what is in these?' });
  });

  it('sends s3Location to Amazon Nova instead of bytes, and reads no bytes for it', async () => {
    const image = png(8, 8, 2);
    const a = file(image, 'image/png', 'shot.png');
    await llm().generate(ask('bedrock/us.amazon.nova-pro-v1:0', [a]));
    const content = bedrock.commandCalls(ConverseCommand)[0]!.args[0].input.messages![0]!.content!;
    expect(content[0]).toEqual({
      image: {
        format: 'png',
        source: { s3Location: { uri: `s3://crumbs-blobs-prod/ws/${WS}/blobs/${a.ref.sha256}` } },
      },
    });
  });

  it('sends image, audio and PDF file parts to an OpenAI-compatible server, and CSV as text', async () => {
    const image = png(3, 3, 3);
    const wav = Buffer.concat([
      Buffer.from('RIFF'),
      Buffer.alloc(4),
      Buffer.from('WAVEfmt '),
      Buffer.alloc(32),
    ]);
    const csv = Buffer.from('a,b\n1,2\n');
    await llm().generate(
      ask('openai-compatible/vision', [
        file(image, 'image/png', 'shot.png'),
        file(wav, 'audio/wav', 'note.wav'),
        file(pdf('x'), 'application/pdf', 'doc.pdf'),
        file(csv, 'text/csv', 'rows.csv'),
      ]),
    );
    const parts = (received[0]!.messages as { role: string; content: unknown }[]).find(
      (m) => m.role === 'user',
    )!.content as Record<string, unknown>[];
    expect(parts.map((p) => p.type)).toEqual(['text', 'image_url', 'input_audio', 'file', 'text']);
    expect((parts[1]!.image_url as { url: string }).url).toBe(
      `data:image/png;base64,${image.toString('base64')}`,
    );
    expect(parts[2]!.input_audio).toEqual({ data: wav.toString('base64'), format: 'wav' });
    expect((parts[4]!.text as string).endsWith('a,b\n1,2\n')).toBe(true);
  });

  it('refuses a 21st image before any provider call, naming the limit', async () => {
    const many = Array.from({ length: 21 }, (_, i) => file(png(2, 2, 100 + i), 'image/png', `${i}.png`));
    await expect(
      llm().generate(ask('bedrock/anthropic.claude-3-5-sonnet-20240620-v1:0', many)),
    ).rejects.toThrow(/21 images in one request; at most 20/);
    await expect(llm().generate(ask('openai-compatible/vision', many))).rejects.toThrow(NonRetriableError);
    expect(bedrock.commandCalls(ConverseCommand)).toHaveLength(0);
    expect(received).toHaveLength(0);
  });

  it('refuses an image over 8,000 px a side and a sixth document for Converse, naming the limit', async () => {
    const wide = png(8001, 1, 5);
    expect(imageSize(wide)).toEqual({ width: 8001, height: 1 });
    await expect(
      llm().generate(
        ask('bedrock/anthropic.claude-3-5-sonnet-20240620-v1:0', [file(wide, 'image/png', 'wide.png')]),
      ),
    ).rejects.toThrow(/8001×1 px; Converse takes at most 8000 px a side/);
    const docs = Array.from({ length: 6 }, (_, i) => file(pdf(`doc ${i}`), 'application/pdf', `${i}.pdf`));
    await expect(
      llm().generate(ask('bedrock/anthropic.claude-3-5-sonnet-20240620-v1:0', docs)),
    ).rejects.toThrow(/6 documents in one request; at most 5/);
    expect(bedrock.commandCalls(ConverseCommand)).toHaveLength(0);
  });

  it('sends only the last few images of earlier messages again; older ones become a reference', async () => {
    const older = Array.from({ length: 6 }, (_, i) => file(png(2, 2, 200 + i), 'image/png', `old${i}.png`));
    const latest = file(png(2, 2, 300), 'image/png', 'now.png');
    await llm().generate({
      model: 'bedrock/anthropic.claude-3-5-sonnet-20240620-v1:0',
      system: 's',
      messages: [
        ...older.map((a) => ({ role: 'user' as const, content: 'look', attachments: [a] })),
        { role: 'user', content: 'and now?', attachments: [latest] },
      ],
    });
    const content = bedrock
      .commandCalls(ConverseCommand)[0]!
      .args[0].input.messages!.flatMap((m) => m.content!);
    expect(content.filter((b) => 'image' in b && b.image)).toHaveLength(KEEP_INLINE_IMAGES + 1);
    expect(content.filter((b) => 'text' in b && b.text?.startsWith('[earlier image'))).toHaveLength(
      6 - KEEP_INLINE_IMAGES,
    );
  });

  it('reduces document names to what Converse accepts and collects each referenced file once', () => {
    expect(converseDocumentName('../../etc/passwd')).toBe('etc passwd');
    expect(converseDocumentName('a__b  [1] (x).pdf')).toBe('a b [1] (x)');
    expect(converseDocumentName('???')).toBe('document');
    const ref = { id: `att_${'a'.repeat(64)}`, media_type: 'image/png', bytes: 3, sha256: 'a'.repeat(64) };
    expect(
      attachmentsOfContext({ trigger: { a: { $attachment: ref } }, other: [{ $attachment: ref }] }),
    ).toEqual([{ ref }]);
  });
});
