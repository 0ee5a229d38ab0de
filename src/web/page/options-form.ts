// A small form built from a conversion's option descriptors (GET /api/formats/{source}/{target}):
// one labelled field per option, its description and bounds read out with it (aria-describedby),
// its default as the placeholder or the pre-set state. Only what the user changed is sent: an empty
// field, a select left on "Default" or a checkbox in its default state sends nothing, so that a
// conversion without changes is exactly the service's default one.
import type { OptionDescriptor } from '../../client/convertd-client.ts';

let formCount = 0;

/** "page_range" → "Page range". */
export function optionLabel(name: string): string {
  const words = name.replace(/_/g, ' ');
  return words.charAt(0).toUpperCase() + words.slice(1);
}

/** The hint under a field: what it does, and what it allows. */
function hintText(option: OptionDescriptor): string {
  const parts = [option.description.trim()];
  if ((option.type === 'integer' || option.type === 'number') && option.minimum !== undefined && option.maximum !== undefined
    && !option.description.includes(`${option.minimum}-${option.maximum}`)) parts.push(`From ${option.minimum} to ${option.maximum}.`);
  if (option.default !== undefined && option.type !== 'boolean') parts.push(`Default: ${String(option.default)}.`);
  return parts.join(' ');
}

/**
 * Several pairs' descriptors as one list, by name, for a form that applies to all of them (Convert
 * all): the widest bounds and every value; a default only where all agree.
 */
export function mergeDescriptors(lists: ReadonlyArray<readonly OptionDescriptor[]>): OptionDescriptor[] {
  const byName = new Map<string, OptionDescriptor>();
  for (const list of lists) {
    for (const option of list) {
      const seen = byName.get(option.name);
      if (!seen) {
        byName.set(option.name, { ...option });
        continue;
      }
      const merged: OptionDescriptor = { ...seen };
      if (seen.minimum !== undefined && option.minimum !== undefined) merged.minimum = Math.min(seen.minimum, option.minimum);
      if (seen.maximum !== undefined && option.maximum !== undefined) merged.maximum = Math.max(seen.maximum, option.maximum);
      if (seen.values || option.values) merged.values = [...new Set([...(seen.values ?? []), ...(option.values ?? [])])];
      if (seen.default !== option.default) {
        delete merged.default;
        if (!merged.description.includes('(The default depends on the file.)')) merged.description = `${merged.description} (The default depends on the file.)`;
      }
      byName.set(option.name, merged);
    }
  }
  return [...byName.values()].sort((a, b) => a.name.localeCompare(b.name));
}

/** The order of the fields: what people change most first (the service lists them by name); others after, by name. */
const ORDER = ['each', 'page_range', 'sheet', 'quality', 'width', 'height', 'fit', 'pixel_density', 'video_codec', 'crf', 'fps',
  'audio_codec', 'audio_bitrate', 'audio_frequency', 'audio_channels', 'trim_start', 'trim_end', 'pdf_a', 'delimiter', 'background', 'strip'];
const rank = (name: string) => (ORDER.includes(name) ? ORDER.indexOf(name) : ORDER.length);

interface Field {
  readonly option: OptionDescriptor;
  readonly control: HTMLInputElement | HTMLSelectElement;
  /** For a string option: its syntax, checked here (see syntaxOf). */
  readonly syntax?: RegExp;
}

/**
 * A string option's syntax as a regular expression, or none when it does not compile here. Not the
 * pattern attribute: browsers compile that with the `v` flag, under which some of the service's
 * patterns are not valid (a "|" in a character class) and would be dropped without a word.
 */
function syntaxOf(option: OptionDescriptor): RegExp | undefined {
  if (option.type !== 'string' || !option.pattern) return undefined;
  try {
    return new RegExp(`^(?:${option.pattern.replace(/^\^/, '').replace(/\$$/, '')})$`, 'u');
  } catch {
    return undefined; // the service checks it anyway
  }
}

export class OptionsForm {
  /** The `<details>` holding the form: its summary says how many options there are and which are set. */
  readonly element: HTMLDetailsElement;
  readonly options: readonly OptionDescriptor[];
  private readonly fields = new Map<string, Field>();
  private readonly summary: HTMLElement;
  private readonly title: string;
  private readonly listeners: Array<(name: string) => void> = [];

  /** `title` names what the options are for ("Options for photo.png → jpg"), for the legend and screen readers. */
  constructor(options: readonly OptionDescriptor[], title: string, summaryText = 'Options') {
    this.options = options;
    this.title = summaryText;
    const prefix = `opt${++formCount}`;
    this.element = document.createElement('details');
    this.element.className = 'options';
    this.summary = document.createElement('summary');
    this.element.append(this.summary);
    const fieldset = document.createElement('fieldset');
    const legend = document.createElement('legend');
    legend.className = 'visually-hidden';
    legend.textContent = title;
    fieldset.append(legend);
    for (const option of [...options].sort((a, b) => rank(a.name) - rank(b.name) || a.name.localeCompare(b.name))) {
      const id = `${prefix}-${option.name}`;
      const row = document.createElement('div');
      row.className = `option option-${option.type}`;
      row.dataset.option = option.name;
      const label = document.createElement('label');
      label.htmlFor = id;
      label.textContent = optionLabel(option.name);
      const hint = document.createElement('small');
      hint.className = 'hint';
      hint.id = `${id}-hint`;
      hint.textContent = hintText(option);
      const control = this.control(option, id);
      control.setAttribute('aria-describedby', hint.id);
      control.addEventListener('input', () => this.changed(option.name));
      control.addEventListener('change', () => this.changed(option.name));
      // A checkbox reads best with its label after it.
      if (control instanceof HTMLInputElement && control.type === 'checkbox') row.append(control, label, hint);
      else row.append(label, control, hint);
      fieldset.append(row);
      this.fields.set(option.name, { option, control, syntax: syntaxOf(option) });
    }
    this.element.append(fieldset);
    this.updateSummary();
  }

  get names(): ReadonlySet<string> {
    return new Set(this.fields.keys());
  }

  /** Called with an option's name whenever the user changes it. */
  onChange(listener: (name: string) => void): void {
    this.listeners.push(listener);
  }

  /** The options the user set, as the text parts to send. */
  values(): Record<string, string> {
    const values: Record<string, string> = {};
    for (const [name, { option, control }] of this.fields) {
      const value = this.valueOf(option, control);
      if (value !== undefined) values[name] = value;
    }
    return values;
  }

  /** Sets an option (`undefined`: back to its default), as if the user had; ignored when this form has no such option. */
  set(name: string, value: string | undefined): void {
    const field = this.fields.get(name);
    if (!field) return;
    const { option, control } = field;
    if (control instanceof HTMLInputElement && control.type === 'checkbox') {
      control.checked = value === undefined ? option.default === true : value === 'true';
    } else if (control instanceof HTMLSelectElement) {
      control.value = value !== undefined && [...control.options].some((o) => o.value === value) ? value : '';
    } else {
      control.value = value ?? '';
    }
    this.markValidity(field);
    this.updateSummary();
  }

  /** The first field whose value the browser finds wrong (outside its bounds, not matching its pattern), with why. */
  firstInvalid(): { control: HTMLElement; message: string } | undefined {
    for (const { option, control } of this.fields.values()) {
      if (!control.checkValidity()) return { control, message: `${optionLabel(option.name)}: ${control.validationMessage || 'this value is not allowed'}` };
    }
    return undefined;
  }

  /** Opens the form and moves the focus to a field. */
  reveal(control: HTMLElement): void {
    this.element.open = true;
    control.focus();
  }

  private control(option: OptionDescriptor, id: string): HTMLInputElement | HTMLSelectElement {
    switch (option.type) {
      case 'enum': {
        const select = document.createElement('select');
        select.id = id;
        select.append(new Option(option.default !== undefined ? `Default (${String(option.default)})` : 'Default', ''));
        for (const value of option.values ?? []) select.append(new Option(value, value));
        return select;
      }
      case 'boolean': {
        const input = document.createElement('input');
        input.type = 'checkbox';
        input.id = id;
        input.checked = option.default === true;
        return input;
      }
      case 'integer':
      case 'number': {
        const input = document.createElement('input');
        input.type = 'number';
        input.id = id;
        input.inputMode = option.type === 'integer' ? 'numeric' : 'decimal';
        input.step = option.type === 'integer' ? '1' : 'any';
        if (option.minimum !== undefined) input.min = String(option.minimum);
        if (option.maximum !== undefined) input.max = String(option.maximum);
        if (option.default !== undefined) input.placeholder = String(option.default);
        return input;
      }
      case 'string': {
        const input = document.createElement('input');
        input.type = 'text';
        input.id = id;
        input.autocomplete = 'off';
        input.spellcheck = false;
        if (option.default !== undefined) input.placeholder = String(option.default);
        return input;
      }
    }
  }

  private valueOf(option: OptionDescriptor, control: HTMLInputElement | HTMLSelectElement): string | undefined {
    if (control instanceof HTMLInputElement && control.type === 'checkbox') {
      return control.checked === (option.default === true) ? undefined : String(control.checked);
    }
    const value = control.value.trim();
    return value === '' ? undefined : value;
  }

  private changed(name: string): void {
    this.markValidity(this.fields.get(name)!);
    this.updateSummary();
    for (const listener of this.listeners) listener(name);
  }

  private markValidity({ control, syntax }: Field): void {
    if (syntax && control instanceof HTMLInputElement) {
      const value = control.value.trim();
      control.setCustomValidity(value === '' || syntax.test(value) ? '' : 'This value is not in the form the option takes (see its description).');
    }
    if (control.checkValidity()) control.removeAttribute('aria-invalid');
    else control.setAttribute('aria-invalid', 'true');
  }

  private updateSummary(): void {
    const set = Object.entries(this.values());
    this.summary.textContent = set.length
      ? `${this.title}: ${set.map(([name, value]) => `${optionLabel(name).toLowerCase()} ${value}`).join(', ')}`
      : `${this.title} (${this.fields.size})`;
  }
}
