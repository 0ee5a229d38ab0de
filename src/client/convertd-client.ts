// The convertd client: the spec's client flow (upload, follow progress, download) for Node and
// browsers alike, with nothing but the platform's fetch, FormData, Blob and AbortSignal. The CLI
// and the web page use it; so can anyone. Its one import is of types (the API's wire shapes, the
// service's own, from src/wire/shapes.ts): nothing of it is left at run time.
//
//   const client = new ConvertdClient('http://127.0.0.1:8080');
//   const { data, filename } = await client.convert(file, 'photo.png', 'webp', { onProgress: (r) => console.log(r.progress) });
//   await client.convert(file, 'photo.png', 'jpg', { options: { quality: 70, width: 800 } });
//   const { options } = await client.options('png', 'jpg');   // what the pair takes
//   await client.delete(record.download_url!);                  // the result goes now
//
// Errors are ConvertdApiError with the service's code; 429 and 503 answers are retried after their
// Retry-After (bounded), and every wait and request stops when the signal aborts.

import type { CatalogueEntry, ConversionOptions, ErrorBody, ErrorCode, FormatList, Limits, OptionDescriptor, ProgressRecord, SubmitAnswer } from '../wire/shapes.ts';

export type { ConversionOptions, Limits, OptionDescriptor, ProgressRecord };
/** One format of /api/formats. */
export type FormatEntry = CatalogueEntry;
/** The error codes of the API contract (the service may add new ones; treat unknown codes as failures). */
export type ApiErrorCode = ErrorCode;

export class ConvertdApiError extends Error {
  /** The service's code, or `network_error` / `protocol_error` when no answer of the contract's shape came. */
  readonly code: ApiErrorCode | 'network_error' | 'protocol_error' | (string & {});
  /** HTTP status, or 0 for a failed job (the code then comes from the progress record) or no answer. */
  readonly status: number;
  readonly details: Readonly<Record<string, unknown>>;
  /** Seconds the service asked to wait (Retry-After), when it said. */
  readonly retryAfterSeconds: number | undefined;

  constructor(code: string, message: string, status = 0, details: Record<string, unknown> = {}, retryAfterSeconds?: number) {
    super(message);
    this.name = 'ConvertdApiError';
    this.code = code;
    this.status = status;
    this.details = details;
    this.retryAfterSeconds = retryAfterSeconds;
  }
}

export interface WaitOptions {
  /** Called with every new progress record (progress only rises). */
  readonly onProgress?: (record: ProgressRecord) => void;
  readonly signal?: AbortSignal;
  /** Polling interval when the event stream is not used; the spec's client polls every half second. */
  readonly pollIntervalMs?: number;
  /** Use the Server-Sent Events stream when the service offers it (default true); polling otherwise. */
  readonly events?: boolean;
}

/**
 * Conversion options by name (GET /api/formats/{source}/{target} lists a pair's), each sent as a
 * text part beside `file` and `target`: numbers and booleans as their decimal or true/false text.
 */
export type OptionValues = Readonly<Record<string, string | number | boolean>>;

export interface SubmitOptions {
  readonly signal?: AbortSignal;
  /** How often a 429 or 503 answer is retried after its Retry-After (default 3). */
  readonly maxRetries?: number;
  /** Conversion options; a value the pair cannot take is refused with ConvertdApiError `invalid_option` (status 422). */
  readonly options?: OptionValues;
}

export interface ConvertOptions extends WaitOptions {
  /** How often a 429 or 503 answer is retried after its Retry-After (default 3). */
  readonly maxRetries?: number;
  /** Conversion options (see SubmitOptions.options). */
  readonly options?: OptionValues;
}

export interface ConvertResult {
  readonly record: ProgressRecord;
  readonly data: Blob;
  /** The name the service gives the result (the upload's name with the new extension). */
  readonly filename: string;
}

export interface ClientOptions {
  readonly fetch?: typeof fetch;
  /** The longest a Retry-After is honoured before giving up instead (default 120 s). */
  readonly maxRetryAfterSeconds?: number;
}

/** Waits, unless the signal aborts first. */
function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) {
      reject(signal.reason);
      return;
    }
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal!.reason);
    };
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}

/** The file name in a Content-Disposition header (RFC 6266: filename* wins over filename). */
export function filenameFromDisposition(header: string | null): string | undefined {
  if (!header) return undefined;
  const extended = /filename\*\s*=\s*UTF-8''([^;]+)/i.exec(header);
  if (extended) {
    try {
      return decodeURIComponent(extended[1]!.trim());
    } catch {
      // fall through to the plain parameter
    }
  }
  const plain = /filename\s*=\s*(?:"((?:[^"\\]|\\.)*)"|([^;]+))/i.exec(header);
  return plain ? (plain[1]?.replace(/\\(.)/g, '$1') ?? plain[2]!.trim()) : undefined;
}

/** The form parts of some options, in a stable order; a name that could not be a form part is refused here. */
function optionParts(options: OptionValues): Array<[string, string]> {
  return Object.entries(options).map(([name, value]) => {
    // `file` and `target` are the submission's own parts; an empty name is no option at all.
    if (!name || name === 'file' || name === 'target') throw new ConvertdApiError('invalid_option', `"${name}" is not an option name.`, 0, { option: name, reason: 'not an option name' });
    if (typeof value === 'number' && !Number.isFinite(value)) throw new ConvertdApiError('invalid_option', `Option "${name}": ${value} is not a number.`, 0, { option: name, reason: 'not a finite number' });
    return [name, typeof value === 'string' ? value : String(value)];
  });
}

export class ConvertdClient {
  readonly baseUrl: string;
  private readonly fetcher: typeof fetch;
  private readonly maxRetryAfterSeconds: number;

  /** `baseUrl` is the service's address ("http://127.0.0.1:8080"), or "" for the page's own origin. */
  constructor(baseUrl = '', options: ClientOptions = {}) {
    this.baseUrl = baseUrl.replace(/\/+$/, '');
    this.fetcher = options.fetch ?? ((input, init) => fetch(input, init));
    this.maxRetryAfterSeconds = options.maxRetryAfterSeconds ?? 120;
  }

  async formats(signal?: AbortSignal): Promise<readonly FormatEntry[]> {
    return (await this.json<FormatList>('/api/formats', { signal })).formats;
  }

  async limits(signal?: AbortSignal): Promise<Limits> {
    return this.json<Limits>('/api/limits', { signal });
  }

  /**
   * The options a conversion takes (GET /api/formats/{source}/{target}): their names, types, bounds
   * or values and defaults. `source` and `target` are format ids or extensions.
   */
  async options(source: string, target: string, signal?: AbortSignal): Promise<ConversionOptions> {
    return this.json<ConversionOptions>(`/api/formats/${encodeURIComponent(source)}/${encodeURIComponent(target)}`, { signal });
  }

  /**
   * Uploads a file; resolves with the job id. 429 and 503 are retried after their Retry-After.
   * Options go as text parts after `target`.
   */
  async submit(file: Blob, filename: string, target: string, { signal, maxRetries = 3, options = {} }: SubmitOptions = {}): Promise<string> {
    const parts = optionParts(options);
    const body = await this.withRetries(maxRetries, signal, () => {
      const form = new FormData();
      form.append('file', file, filename);
      form.append('target', target);
      for (const [name, value] of parts) form.append(name, value);
      return this.json<SubmitAnswer>('/api/convert', { method: 'POST', body: form, signal });
    });
    return body.job_id;
  }

  async progress(jobId: string, signal?: AbortSignal): Promise<ProgressRecord> {
    return this.json<ProgressRecord>(`/api/progress/${encodeURIComponent(jobId)}`, { signal });
  }

  /**
   * Follows a job until it is done (resolves with the final record) or failed (rejects with its
   * code and message, status 0). Uses the event stream when offered, polling otherwise.
   */
  async wait(jobId: string, options: WaitOptions = {}): Promise<ProgressRecord> {
    let last: ProgressRecord | undefined;
    const report = (record: ProgressRecord) => {
      if (last && record.status === last.status && record.progress === last.progress) return;
      last = record;
      options.onProgress?.(record);
    };
    let final: ProgressRecord | undefined;
    if (options.events !== false) final = await this.followEvents(jobId, report, options.signal);
    while (!final) {
      const record = await this.withRetries(5, options.signal, () => this.progress(jobId, options.signal));
      report(record);
      if (record.status === 'done' || record.status === 'error') final = record;
      else await sleep(options.pollIntervalMs ?? 500, options.signal);
    }
    if (final.status === 'error') {
      throw new ConvertdApiError(final.error?.code ?? 'conversion_failed', final.error?.message ?? 'The conversion failed.', 0, { job_id: jobId });
    }
    return final;
  }

  /** Downloads a finished job's result. */
  async download(record: ProgressRecord, signal?: AbortSignal): Promise<{ data: Blob; filename: string }> {
    if (!record.download_url) throw new ConvertdApiError('protocol_error', 'The job has no download URL: it is not done.');
    const response = await this.request(record.download_url, { signal });
    const data = await response.blob();
    const filename = filenameFromDisposition(response.headers.get('content-disposition'))
      ?? record.download_url.split('/').pop() ?? 'converted';
    return { data, filename };
  }

  /**
   * Deletes a result now, before its lifetime ends (DELETE on its download URL): afterwards its
   * download and progress record answer 410 `expired`. Takes a download URL (relative to the
   * service, as the progress record's `download_url`, or absolute) or the record itself.
   */
  async delete(download: string | Pick<ProgressRecord, 'download_url'>, signal?: AbortSignal): Promise<void> {
    const url = typeof download === 'string' ? download : download.download_url;
    if (!url) throw new ConvertdApiError('protocol_error', 'The job has no download URL: there is no result to delete.');
    const response = await this.request(url, { method: 'DELETE', signal });
    await response.body?.cancel();
  }

  /** The whole flow: upload, follow progress, download. */
  async convert(file: Blob, filename: string, target: string, options: ConvertOptions = {}): Promise<ConvertResult> {
    const jobId = await this.submit(file, filename, target, { signal: options.signal, maxRetries: options.maxRetries, options: options.options });
    const record = await this.wait(jobId, options);
    const { data, filename: resultName } = await this.download(record, options.signal);
    return { record, data, filename: resultName };
  }

  /**
   * Reads the job's event stream until a final record. Resolves undefined (so that the caller
   * polls) when the service has no stream or the stream breaks before the end.
   */
  private async followEvents(jobId: string, report: (record: ProgressRecord) => void, signal?: AbortSignal): Promise<ProgressRecord | undefined> {
    let response: Response;
    try {
      response = await this.fetcher(`${this.baseUrl}/api/progress/${encodeURIComponent(jobId)}/events`, { headers: { accept: 'text/event-stream' }, signal });
    } catch (error) {
      if (signal?.aborted) throw signal.reason;
      void error;
      return undefined;
    }
    if (response.status === 404) {
      // Either no such job (the polling request will say so) or no stream on this service.
      await response.body?.cancel();
      return undefined;
    }
    if (!response.ok || !response.body || !(response.headers.get('content-type') ?? '').startsWith('text/event-stream')) {
      await response.body?.cancel();
      return undefined;
    }
    const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
    let buffer = '';
    try {
      for (;;) {
        const { value, done } = await reader.read();
        if (done) return undefined;
        buffer += value;
        let end: number;
        while ((end = buffer.indexOf('\n\n')) >= 0) {
          const event = buffer.slice(0, end);
          buffer = buffer.slice(end + 2);
          const data = event.split('\n').filter((line) => line.startsWith('data:')).map((line) => line.slice(5).trim()).join('\n');
          if (!data) continue; // a comment (keep-alive)
          const record = JSON.parse(data) as ProgressRecord;
          report(record);
          if (record.status === 'done' || record.status === 'error') return record;
        }
      }
    } catch (error) {
      if (signal?.aborted) throw signal.reason;
      void error;
      return undefined;
    } finally {
      reader.cancel().catch(() => undefined);
    }
  }

  /** Runs `attempt`, waiting out 429 and 503 answers (their Retry-After, bounded) up to `retries` times. */
  private async withRetries<T>(retries: number, signal: AbortSignal | undefined, attempt: () => Promise<T>): Promise<T> {
    for (let tries = 0; ; tries++) {
      try {
        return await attempt();
      } catch (error) {
        // A connection the service closed as the request went out (a reused keep-alive socket
        // timing out at that very moment): the request never arrived, so it is sent once more.
        if (error instanceof ConvertdApiError && error.code === 'network_error' && /EPIPE|ECONNRESET|other side closed/.test(error.message) && tries === 0) continue;
        const retryable = error instanceof ConvertdApiError && (error.status === 429 || error.status === 503);
        if (!retryable || tries >= retries) throw error;
        const seconds = error.retryAfterSeconds ?? 2 ** tries;
        if (seconds > this.maxRetryAfterSeconds) throw error;
        await sleep(seconds * 1000, signal);
      }
    }
  }

  private async request(path: string, init: RequestInit): Promise<Response> {
    let response: Response;
    try {
      response = await this.fetcher(/^https?:\/\//i.test(path) ? path : `${this.baseUrl}${path}`, init);
    } catch (error) {
      if (init.signal?.aborted) throw init.signal.reason;
      // fetch says only "fetch failed"; the reason (refused, reset, ...) is in its cause.
      const cause = error instanceof Error && error.cause instanceof Error ? `: ${error.cause.message}` : '';
      throw new ConvertdApiError('network_error', `The service at ${this.baseUrl || 'this origin'} did not answer (${error instanceof Error ? error.message : String(error)}${cause}).`);
    }
    if (response.ok) return response;
    const text = await response.text();
    const retryAfterHeader = response.headers.get('retry-after');
    const retryAfter = retryAfterHeader === null ? Number.NaN : Number(retryAfterHeader);
    // Not trusted to be the contract's shape: it may come from a proxy in front of the service.
    let body: { error?: Partial<ErrorBody['error']> } = {};
    try {
      body = JSON.parse(text) as typeof body;
    } catch {
      // not the contract's shape
    }
    const { code, message, ...details } = body.error ?? {};
    throw new ConvertdApiError(code ?? 'protocol_error', message ?? `HTTP ${response.status}`, response.status, details,
      Number.isFinite(retryAfter) && retryAfter >= 0 ? retryAfter : undefined);
  }

  private async json<T>(path: string, init: RequestInit): Promise<T> {
    return (await this.request(path, init)).json() as Promise<T>;
  }
}
