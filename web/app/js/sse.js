// Server-sent events as amsg-client parses them (reference §2.9): line
// endings normalised, a trailing CR held back until the next chunk, comments
// skipped, `event:` and every `data:` value trimmed, several data lines joined
// with \n, id and retry ignored, and a last frame without its blank line
// still read at the end of the stream.

export class SSEDecoder {
  constructor() {
    this.buffer = '';
    this.heldCR = false;
  }

  /** Adds decoded text and returns the frames it completed: [{event, data}]. */
  push(text) {
    if (this.heldCR) {
      text = '\r' + text;
      this.heldCR = false;
    }
    if (text.endsWith('\r')) {
      this.heldCR = true;
      text = text.slice(0, -1);
    }
    this.buffer += text.replace(/\r\n?/g, '\n');
    const frames = [];
    let end;
    while ((end = this.buffer.indexOf('\n\n')) >= 0) {
      const frame = parseFrame(this.buffer.slice(0, end));
      this.buffer = this.buffer.slice(end + 2);
      if (frame) frames.push(frame);
    }
    return frames;
  }

  /** Ends the stream: the frames still buffered. */
  end() {
    const frames = this.push(this.heldCR ? '\n' : '');
    this.heldCR = false;
    const last = parseFrame(this.buffer);
    this.buffer = '';
    if (last) frames.push(last);
    return frames;
  }
}

function parseFrame(block) {
  let event = 'message';
  const data = [];
  let seen = false;
  for (const line of block.split('\n')) {
    if (line === '' || line.startsWith(':')) continue;
    const colon = line.indexOf(':');
    const field = colon < 0 ? line : line.slice(0, colon);
    const value = colon < 0 ? '' : line.slice(colon + 1);
    if (field === 'event') {
      event = value.trim();
      seen = true;
    } else if (field === 'data') {
      data.push(value.trim());
      seen = true;
    }
  }
  return seen ? { event, data: data.join('\n') } : null;
}

/** An `event: error` frame or a stream the server ended with an error. */
export class StreamError extends Error {
  constructor(code, message, payload) {
    super(message || 'Stream error');
    this.name = 'StreamError';
    this.code = code;
    this.payload = payload;
  }
}

/**
 * Reads an SSE response to its end: onPayload gets each `event: payload`
 * object (invalid JSON is skipped); `done` ends reading at once; `error`
 * throws a StreamError. The end of the body counts as a clean end.
 */
export async function consumeSSE(response, onPayload) {
  const reader = response.body.getReader();
  const text = new TextDecoder();
  const decoder = new SSEDecoder();
  const handle = async (frames) => {
    for (const { event, data } of frames) {
      if (event === 'done') return true;
      if (event === 'error') {
        let body;
        try {
          body = JSON.parse(data);
        } catch {
          body = { code: 'PARSE_ERROR', message: data };
        }
        throw new StreamError(body && body.code, body && body.message, body);
      }
      if (event !== 'payload') continue;
      let payload;
      try {
        payload = JSON.parse(data);
      } catch {
        continue;
      }
      await onPayload(payload);
    }
    return false;
  };
  try {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      if (await handle(decoder.push(text.decode(value, { stream: true })))) return;
    }
    await handle(decoder.push(text.decode()).concat(decoder.end()));
  } finally {
    reader.cancel().catch(() => {});
  }
}
