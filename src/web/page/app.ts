// The web page: convert files in a browser with the service's public API, through the same client
// the CLI uses (src/client/convertd-client.ts). Plain TypeScript and the DOM, bundled by esbuild
// when the service starts: no framework, nothing loaded from elsewhere.
import { ConvertdApiError, ConvertdClient, type ConversionOptions, type FormatEntry, type Limits, type ProgressRecord } from '../../client/convertd-client.ts';
import { defaultTarget } from './default-targets.ts';
import { mergeDescriptors, OptionsForm } from './options-form.ts';

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
  state: 'ready' | 'working' | 'done' | 'failed' | 'deleted';
  result?: { url: string; name: string; size: number; expiresAt?: number };
  controller?: AbortController;
  /** The options form of the chosen pair, once its descriptors came (none while they load, or when they could not). */
  form?: OptionsForm;
  /** The pair the form is for, "source/target". */
  formKey?: string;
}
const items: Item[] = [];
let nextId = 1;

/** Each pair's options, asked once: "source/target" → the answer. */
const optionsCache = new Map<string, Promise<ConversionOptions>>();
/** The "Convert all" options form (the options of every file's pair together), and the values set in it. */
let batchForm: OptionsForm | undefined;
const batchValues: Record<string, string> = {};

/** The user's last target for a source format, kept in this browser (none when storage is off). */
const REMEMBER_PREFIX = 'convertd:target:';
function rememberedTarget(source: string): string | null {
  try {
    return localStorage.getItem(REMEMBER_PREFIX + source);
  } catch {
    return null;
  }
}
function rememberTarget(source: string, target: string): void {
  try {
    localStorage.setItem(REMEMBER_PREFIX + source, target);
  } catch {
    // storage off or full: the table's default serves next time
  }
}

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
    case 'expired': return 'Expired: results are deleted after their lifetime (or on request). Convert the file again.';
    default: return error.message;
  }
}

function refreshBatch(): void {
  $('#batch').hidden = items.length === 0;
  ($('#download-all') as HTMLButtonElement).disabled = !items.some((i) => i.state === 'done');
  const common = items.filter((i) => i.source).map((i) => new Set(i.source!.targets));
  const shared = common.length ? [...common[0]!].filter((t) => common.every((set) => set.has(t))) : [];
  fillTargets($('#target-all'), shared, '', '(choose per file)');
  refreshBatchOptions();
}

/**
 * The "Convert all" options: every option of the files' chosen pairs, once. A value set here is set
 * in the form of each file whose conversion takes that option (and only there), so that every file
 * shows what it will be converted with; a file's own change afterwards wins for that file.
 */
function refreshBatchOptions(): void {
  const container = $('#batch-options');
  const lists = items.filter((i) => i.form).map((i) => i.form!.options);
  const merged = mergeDescriptors(lists);
  const signature = JSON.stringify(merged);
  if (batchForm && JSON.stringify(batchForm.options) === signature) return;
  const wasOpen = batchForm?.element.open === true;
  batchForm = undefined;
  container.replaceChildren();
  if (merged.length === 0) return;
  const form = new OptionsForm(merged, 'Options for every file: each file takes those that apply to it', 'Options for every file');
  for (const [name, value] of Object.entries(batchValues)) form.set(name, value);
  form.element.open = wasOpen;
  form.onChange((name) => {
    const value = form.values()[name];
    if (value === undefined) delete batchValues[name];
    else batchValues[name] = value;
    for (const item of items) item.form?.set(name, value);
  });
  batchForm = form;
  container.append(form.element);
}

/** Loads the options of a file's chosen pair and shows them under its target (keeping values the new pair also takes). */
async function showOptions(item: Item): Promise<void> {
  const select = $<HTMLSelectElement>('.target', item.element);
  const target = select.value;
  const container = $('.file-options', item.element);
  if (!item.source || !target) {
    container.replaceChildren();
    item.form = undefined;
    item.formKey = undefined;
    refreshBatchOptions();
    return;
  }
  const key = `${item.source.id}/${target}`;
  if (item.formKey === key) return;
  const previous = item.form?.values() ?? {};
  const wasOpen = item.form?.element.open === true;
  let answer: ConversionOptions;
  try {
    let pending = optionsCache.get(key);
    if (!pending) {
      pending = client.options(item.source.id, target);
      optionsCache.set(key, pending);
      pending.catch(() => optionsCache.delete(key)); // asked again next time
    }
    answer = await pending;
  } catch {
    // No form (the file converts with the defaults); the submission will say if the pair is wrong.
    answer = { source: item.source.id, target, steps: [], options: [] };
  }
  if (select.value !== target || !item.element.isConnected) return; // another target was chosen meanwhile
  item.formKey = key;
  if (answer.options.length === 0) {
    container.replaceChildren();
    item.form = undefined;
  } else {
    const form = new OptionsForm(answer.options, `Options for ${item.file.name} → ${target}`);
    for (const [name, value] of Object.entries({ ...previous, ...batchValues })) form.set(name, value);
    form.element.open = wasOpen;
    container.replaceChildren(form.element);
    item.form = form;
  }
  refreshBatchOptions();
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
    const deleteButton = $<HTMLButtonElement>('.delete-result', element);
    deleteButton.setAttribute('aria-label', `Delete the result of ${file.name} from the server now`);
    deleteButton.addEventListener('click', () => void deleteResult(item));
    if (item.source && item.source.targets.length) {
      const source = item.source;
      fillTargets(select, source.targets);
      select.value = defaultTarget(source, rememberedTarget(source.id)) ?? '';
      filter.addEventListener('input', () => {
        fillTargets(select, source.targets, filter.value);
        void showOptions(item);
      });
      select.addEventListener('change', () => {
        if (select.value) rememberTarget(source.id, select.value);
        void showOptions(item);
      });
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
    if (!convertButton.disabled) void showOptions(item);
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
  const before = item.state;
  item.state = 'working'; // a second press meanwhile does nothing
  // A target chosen a moment ago: its form (with the values carried over to it) first.
  if (item.source && item.formKey !== `${item.source.id}/${target}`) await showOptions(item);
  const invalid = item.form?.firstInvalid();
  if (invalid) {
    item.state = before;
    setStatus(item, `${invalid.message} Correct it, then convert.`, 'error');
    item.form!.reveal(invalid.control);
    return;
  }
  // Only what the user changed (here or for every file); a pair whose options could not be read sends none.
  const options = item.formKey === `${item.source?.id}/${target}` ? (item.form?.values() ?? {}) : {};
  item.controller = new AbortController();
  const { signal } = item.controller;
  const progress = $<HTMLProgressElement>('progress', item.element);
  const link = $<HTMLAnchorElement>('.download', item.element);
  link.hidden = true;
  $('.delete-result', item.element).hidden = true;
  $('.file-note', item.element).textContent = '';
  progress.hidden = false;
  progress.value = 0;
  // Not `disabled`: a disabled button drops the keyboard focus; a second press is ignored instead.
  $<HTMLButtonElement>('.convert', item.element).setAttribute('aria-disabled', 'true');
  setStatus(item, 'Uploading…');
  try {
    let jobId: string | undefined;
    while (!jobId) {
      try {
        jobId = await client.submit(item.file, item.file.name, target, { signal, maxRetries: 0, options });
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
    $('.delete-result', item.element).hidden = false;
    setStatus(item, 'Done.', 'done');
    $('.file-note', item.element).textContent = optionsNote(record);
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

/** What the service did with the options: those applied (its echo) and those that do not apply to this pair. */
function optionsNote(record: ProgressRecord): string {
  const applied = Object.entries(record.options ?? {}).map(([name, value]) => `${name.replace(/_/g, ' ')} ${value}`);
  const notes = [];
  if (applied.length) notes.push(`Converted with ${applied.join(', ')}.`);
  if (record.ignored_options?.length) notes.push(`Not used for ${record.source} → ${record.target}: ${record.ignored_options.join(', ').replace(/_/g, ' ')}.`);
  return notes.join(' ');
}

/** "Delete now": the result goes from the server at once (DELETE on its download URL). */
async function deleteResult(item: Item): Promise<void> {
  if (item.state !== 'done' || !item.result) return;
  const button = $<HTMLButtonElement>('.delete-result', item.element);
  button.setAttribute('aria-disabled', 'true');
  let message = 'Deleted from the server.';
  try {
    await client.delete(item.result.url);
  } catch (error) {
    button.removeAttribute('aria-disabled');
    if (!(error instanceof ConvertdApiError && (error.code === 'expired' || error.code === 'file_not_found'))) {
      const text = `Not deleted: ${describeError(error)}`;
      $('.file-note', item.element).textContent = text;
      announce(`${item.file.name}: ${text}`);
      return;
    }
    message = 'Already gone from the server (expired or deleted).';
  }
  button.removeAttribute('aria-disabled');
  item.state = 'deleted';
  item.result = undefined;
  const link = $<HTMLAnchorElement>('.download', item.element);
  link.hidden = true;
  link.removeAttribute('href');
  button.hidden = true;
  $('.file-note', item.element).textContent = '';
  setStatus(item, `${message} Convert the file again to get a new result.`, 'done');
  announce(`${item.file.name}: ${message}`);
  // The focus was on the button that is now gone: Convert is the next thing one may do.
  $<HTMLButtonElement>('.convert', item.element).focus();
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
      $('.delete-result', item.element).hidden = true;
      setStatus(item, 'Expired: results are deleted after their lifetime. Convert the file again.', 'error');
      item.state = 'failed';
      $<HTMLButtonElement>('.convert', item.element).disabled = false;
    } else {
      setStatus(item, `Done. Available for ${left >= 120 ? `${Math.floor(left / 60)} min` : `${left} s`}.`, 'done');
    }
  }
}

/** Whether a format answers to the search: its id, name, category or any extension (".mkv" as "mkv"). */
function formatMatches(format: FormatEntry, filter: string): boolean {
  const words = filter.trim().toLowerCase().replace(/^\./, '');
  if (!words) return true;
  return `${format.id} ${format.name} ${format.category} ${format.extensions.join(' ')}`.toLowerCase().includes(words);
}

/** The formats table, one group per category (as /api/formats names them), filtered by the search box. */
function renderFormats(filter = ''): void {
  const shown = formats.filter((f) => formatMatches(f, filter));
  const categories = [...new Set(shown.map((f) => f.category))].sort();
  const groups = categories.map((category) => {
    const group = document.createElement('tbody');
    const members = shown.filter((f) => f.category === category).sort((a, b) => a.id.localeCompare(b.id));
    const heading = document.createElement('tr');
    heading.className = 'category';
    const title = document.createElement('th');
    title.scope = 'colgroup';
    title.colSpan = 3;
    title.textContent = `${category} (${members.length})`;
    heading.append(title);
    group.append(heading, ...members.map((f) => {
      const row = document.createElement('tr');
      const name = document.createElement('th');
      name.scope = 'row';
      const others = f.extensions.filter((ext) => ext !== f.id);
      name.textContent = `${f.id} (${f.name})${others.length ? `, also .${others.join(', .')}` : ''}`;
      const kind = document.createElement('td');
      kind.textContent = f.category;
      const targets = document.createElement('td');
      targets.textContent = f.targets.length ? f.targets.join(', ') : 'written only';
      row.append(name, kind, targets);
      return row;
    }));
    return group;
  });
  const table = $('#formats-table');
  for (const old of table.querySelectorAll('tbody')) old.remove();
  table.append(...groups);
  $('#formats-count').textContent = filter.trim()
    ? `${shown.length} of ${formats.length} formats match.`
    : `${formats.length} formats in ${categories.length} categories.`;
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
      if (![...select.options].some((o) => o.value === target)) continue;
      select.value = target;
      if (item.source) rememberTarget(item.source.id, target);
      void showOptions(item);
    }
  });
  $('#convert-all').addEventListener('click', () => {
    for (const item of items) if (item.state === 'ready' || item.state === 'failed' || item.state === 'deleted') void convertItem(item);
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
