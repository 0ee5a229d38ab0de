// The web page: convert files in a browser with the service's public API, through the same client
// the CLI uses (src/client/convertd-client.ts). Plain TypeScript and the DOM, bundled by esbuild
// when the service starts: no framework, nothing loaded from elsewhere.
import { ConvertdApiError, ConvertdClient, type FormatEntry, type Limits, type ProgressRecord } from '../../client/convertd-client.ts';

const client = new ConvertdClient('');
const $ = <T extends HTMLElement>(selector: string, root: ParentNode = document): T => root.querySelector<T>(selector)!;

let formats: readonly FormatEntry[] = [];
let limits: Limits | undefined;
const byExtension = new Map<string, FormatEntry>();

interface Item {
  readonly id: number;
  readonly file: File;
  readonly element: HTMLLIElement;
  source: FormatEntry | undefined;
  state: 'ready' | 'working' | 'done' | 'failed';
  result?: { url: string; name: string; size: number; expiresAt?: number };
  controller?: AbortController;
}
const items: Item[] = [];
let nextId = 1;

function humanBytes(bytes: number): string {
  if (bytes < 1024) return `${bytes} B`;
  if (bytes < 1024 ** 2) return `${(bytes / 1024).toFixed(1)} KB`;
  return `${(bytes / 1024 ** 2).toFixed(1)} MB`;
}

function announce(text: string): void {
  $('#announcer').textContent = text;
}

/** The format a file's name suggests; the service decides from the content. */
function guessFormat(name: string): FormatEntry | undefined {
  const lower = name.toLowerCase();
  const candidates = [...byExtension.keys()].filter((ext) => lower.endsWith(`.${ext}`)).sort((a, b) => b.length - a.length);
  return candidates.length ? byExtension.get(candidates[0]!) : undefined;
}

/** Fills a select with targets grouped by category, keeping only those matching the filter. */
function fillTargets(select: HTMLSelectElement, targets: readonly string[], filter = '', placeholder?: string): void {
  const previous = select.value;
  select.replaceChildren();
  if (placeholder !== undefined) select.append(new Option(placeholder, ''));
  const groups = new Map<string, Array<Pick<FormatEntry, 'id' | 'name'>>>();
  for (const id of targets) {
    const format = formats.find((f) => f.id === id) ?? { id, name: id, category: 'other' };
    if (filter && !`${format.id} ${format.name}`.toLowerCase().includes(filter.toLowerCase())) continue;
    groups.set(format.category, [...(groups.get(format.category) ?? []), format]);
  }
  for (const [category, entries] of [...groups].sort(([a], [b]) => a.localeCompare(b))) {
    const group = document.createElement('optgroup');
    group.label = category;
    for (const format of entries) group.append(new Option(`${format.id} (${format.name})`, format.id));
    select.append(group);
  }
  if ([...select.options].some((o) => o.value === previous)) select.value = previous;
}

function setStatus(item: Item, text: string, kind: 'info' | 'error' | 'done' = 'info'): void {
  const status = $('.status-text', item.element);
  status.textContent = text;
  status.className = `status-text ${kind}`;
}

function describeError(error: unknown): string {
  if (!(error instanceof ConvertdApiError)) return error instanceof Error ? error.message : String(error);
  switch (error.code) {
    case 'file_too_large': return `Too large: the limit is ${humanBytes(Number(error.details.max_bytes ?? limits?.max_file_size_bytes ?? 0))}.`;
    case 'unsupported_format': return `This file's format is not supported${error.details.detected ? ` (it looks like ${String(error.details.detected)})` : ''}. See the supported formats.`;
    case 'unsupported_target': return 'This file cannot be converted to that format: choose another target.';
    case 'network_error': return 'The service cannot be reached: check your connection and try again.';
    default: return error.message;
  }
}

function refreshBatch(): void {
  $('#batch').hidden = items.length === 0;
  ($('#download-all') as HTMLButtonElement).disabled = !items.some((i) => i.state === 'done');
  const common = items.filter((i) => i.source).map((i) => new Set(i.source!.targets));
  const shared = common.length ? [...common[0]!].filter((t) => common.every((set) => set.has(t))) : [];
  fillTargets($('#target-all'), shared, '', '(choose per file)');
}

function addFiles(files: Iterable<File>): void {
  for (const file of files) {
    const id = nextId++;
    const fragment = ($('#file-template') as HTMLTemplateElement).content.cloneNode(true) as DocumentFragment;
    const element = fragment.querySelector('li')!;
    const item: Item = { id, file, element, source: guessFormat(file.name), state: 'ready' };
    element.dataset.fileId = String(id);
    $('.file-name', element).textContent = file.name;
    $('.file-meta', element).textContent = `${humanBytes(file.size)} · ${item.source ? item.source.id : 'unknown format'}`;
    $('.remove', element).setAttribute('aria-label', `Remove ${file.name}`);
    const select = $<HTMLSelectElement>('.target', element);
    select.id = `target-${id}`;
    select.setAttribute('aria-label', `Target format for ${file.name}`);
    const filter = $<HTMLInputElement>('.target-filter', element);
    filter.setAttribute('aria-label', `Filter target formats for ${file.name}`);
    const convertButton = $<HTMLButtonElement>('.convert', element);
    convertButton.setAttribute('aria-label', `Convert ${file.name}`);
    if (item.source && item.source.targets.length) {
      fillTargets(select, item.source.targets);
      filter.addEventListener('input', () => fillTargets(select, item.source!.targets, filter.value));
    } else {
      select.disabled = true;
      filter.disabled = true;
      convertButton.disabled = true;
      setStatus(item, item.source ? 'This format cannot be converted to anything here.' : 'Unsupported format: see the supported formats.', 'error');
      item.state = 'failed';
    }
    if (limits && file.size > limits.max_file_size_bytes) {
      convertButton.disabled = true;
      setStatus(item, `Too large: the limit is ${humanBytes(limits.max_file_size_bytes)}.`, 'error');
      item.state = 'failed';
    }
    convertButton.addEventListener('click', () => void convertItem(item));
    $('.remove', element).addEventListener('click', () => {
      item.controller?.abort(new Error('removed'));
      element.remove();
      items.splice(items.indexOf(item), 1);
      refreshBatch();
    });
    $('#files').append(element);
    items.push(item);
  }
  refreshBatch();
}

/** Waits out a rate limit, showing the seconds left. */
async function countdown(item: Item, seconds: number, signal: AbortSignal): Promise<void> {
  for (let left = Math.ceil(seconds); left > 0; left--) {
    setStatus(item, `Rate limited: trying again in ${left} s.`, 'error');
    await new Promise((resolve) => setTimeout(resolve, 1000));
    signal.throwIfAborted();
  }
}

async function convertItem(item: Item): Promise<void> {
  const target = $<HTMLSelectElement>('.target', item.element).value;
  if (!target || item.state === 'working') return;
  item.state = 'working';
  item.controller = new AbortController();
  const { signal } = item.controller;
  const progress = $<HTMLProgressElement>('progress', item.element);
  const link = $<HTMLAnchorElement>('.download', item.element);
  link.hidden = true;
  progress.hidden = false;
  progress.value = 0;
  // Not `disabled`: a disabled button drops the keyboard focus; a second press is ignored instead.
  $<HTMLButtonElement>('.convert', item.element).setAttribute('aria-disabled', 'true');
  setStatus(item, 'Uploading…');
  try {
    let jobId: string | undefined;
    while (!jobId) {
      try {
        jobId = await client.submit(item.file, item.file.name, target, { signal, maxRetries: 0 });
      } catch (error) {
        if (error instanceof ConvertdApiError && (error.code === 'rate_limited' || error.code === 'busy') && error.retryAfterSeconds !== undefined) {
          await countdown(item, error.retryAfterSeconds, signal);
          continue;
        }
        throw error;
      }
    }
    const record = await client.wait(jobId, {
      signal,
      onProgress: (r: ProgressRecord) => {
        progress.value = r.progress;
        setStatus(item, r.status === 'queued' ? `Queued${r.queue_position ? ` (${r.queue_position} ahead)` : ''}` : r.status === 'running' ? `Converting… ${r.progress}%` : '');
      },
    });
    const name = `${item.file.name.replace(/\.[^.]+$/, '')}.${record.download_url!.split('.').pop()}`;
    item.result = { url: record.download_url!, name, size: record.size ?? 0, expiresAt: record.expires_at ? Date.parse(record.expires_at) : undefined };
    item.state = 'done';
    progress.value = 100;
    progress.hidden = true;
    link.href = record.download_url!;
    link.textContent = `Download ${name} (${humanBytes(item.result.size)})`;
    link.hidden = false;
    setStatus(item, 'Done.', 'done');
    $<HTMLButtonElement>('.convert', item.element).removeAttribute('aria-disabled');
    announce(`${item.file.name} converted to ${target}.`);
  } catch (error) {
    item.state = 'failed';
    progress.hidden = true;
    const message = describeError(error);
    setStatus(item, message, 'error');
    announce(`${item.file.name}: ${message}`);
    $<HTMLButtonElement>('.convert', item.element).removeAttribute('aria-disabled');
  }
  refreshBatch();
}

/** Shows each result's remaining lifetime, and that it is gone once expired. */
function tickExpiry(): void {
  for (const item of items) {
    if (item.state !== 'done' || !item.result?.expiresAt) continue;
    const left = Math.round((item.result.expiresAt - Date.now()) / 1000);
    const link = $<HTMLAnchorElement>('.download', item.element);
    if (left <= 0) {
      link.hidden = true;
      setStatus(item, 'Expired: results are deleted after their lifetime. Convert the file again.', 'error');
      item.state = 'failed';
      $<HTMLButtonElement>('.convert', item.element).disabled = false;
    } else {
      setStatus(item, `Done. Available for ${left >= 120 ? `${Math.floor(left / 60)} min` : `${left} s`}.`, 'done');
    }
  }
}

function renderFormats(filter = ''): void {
  const rows = formats.filter((f) => !filter || `${f.id} ${f.name} ${f.category} ${f.extensions.join(' ')}`.toLowerCase().includes(filter.toLowerCase()));
  $('#formats-table tbody').replaceChildren(...rows.map((f) => {
    const row = document.createElement('tr');
    const name = document.createElement('th');
    name.scope = 'row';
    name.textContent = `${f.id} (${f.name})`;
    const kind = document.createElement('td');
    kind.textContent = f.category;
    const targets = document.createElement('td');
    targets.textContent = f.targets.length ? f.targets.join(', ') : 'written only';
    row.append(name, kind, targets);
    return row;
  }));
}

function showView(path: string): void {
  const formatsView = path === '/formats';
  $('#convert-view').hidden = formatsView;
  $('#formats-view').hidden = !formatsView;
  for (const link of document.querySelectorAll<HTMLAnchorElement>('nav a')) {
    if (link.getAttribute('href') === path) link.setAttribute('aria-current', 'page');
    else link.removeAttribute('aria-current');
  }
}

async function start(): Promise<void> {
  [formats, limits] = await Promise.all([client.formats(), client.limits()]);
  for (const format of formats) for (const ext of format.extensions) if (!byExtension.has(ext)) byExtension.set(ext, format);
  $('#limits-hint').textContent = `Up to ${humanBytes(limits.max_file_size_bytes)} a file. Results are kept for ${Math.round(limits.file_lifetime_seconds / 60)} minutes.`;
  renderFormats();

  const input = $<HTMLInputElement>('#file-input');
  input.addEventListener('change', () => {
    addFiles(input.files ?? []);
    input.value = '';
  });
  const zone = $('#drop-zone');
  zone.addEventListener('dragover', (event) => {
    event.preventDefault();
    zone.classList.add('dragging');
  });
  zone.addEventListener('dragleave', () => zone.classList.remove('dragging'));
  zone.addEventListener('drop', (event) => {
    event.preventDefault();
    zone.classList.remove('dragging');
    addFiles(event.dataTransfer?.files ?? []);
  });
  document.addEventListener('paste', (event) => {
    const files = [...(event.clipboardData?.files ?? [])];
    if (files.length) addFiles(files.map((f, i) => (f.name && f.name !== 'image.png' ? f : new File([f], `pasted-${Date.now()}-${i}.${f.type.split('/')[1] ?? 'png'}`, { type: f.type }))));
  });
  $('#target-all').addEventListener('change', () => {
    const target = $<HTMLSelectElement>('#target-all').value;
    if (!target) return;
    for (const item of items) {
      const select = $<HTMLSelectElement>('.target', item.element);
      if ([...select.options].some((o) => o.value === target)) select.value = target;
    }
  });
  $('#convert-all').addEventListener('click', () => {
    for (const item of items) if (item.state === 'ready' || item.state === 'failed') void convertItem(item);
  });
  $('#download-all').addEventListener('click', () => {
    for (const item of items) if (item.state === 'done') $<HTMLAnchorElement>('.download', item.element).click();
  });
  $('#format-search').addEventListener('input', () => renderFormats($<HTMLInputElement>('#format-search').value));
  for (const link of document.querySelectorAll<HTMLAnchorElement>('nav a, h1 a')) {
    link.addEventListener('click', (event) => {
      event.preventDefault();
      history.pushState(null, '', link.getAttribute('href'));
      showView(location.pathname);
    });
  }
  window.addEventListener('popstate', () => showView(location.pathname));
  showView(location.pathname);
  setInterval(tickExpiry, 1000);
  document.body.dataset.ready = 'true';
}

start().catch((error: unknown) => {
  $('#limits-hint').textContent = `The service did not answer: ${describeError(error)}`;
});
