// The dashboard's shared parts: the URL state, the /v1 client, number formats, sections, tables and charts.
// Pages (page-*.js) build their views from these and read nothing but the public API.

/** The filters every page may apply; each lives in the URL's query string. */
export const filterNames = ['app', 'ad_network', 'from', 'to', 'tz', 'protocol', 'window', 'environment'];

/** The whole view as the URL holds it: page, filters and page-specific values such as `id` or `sort`. */
export function readState() {
  const query = new URLSearchParams(location.search);
  return { page: query.get('page') || 'overview', query };
}

/** A URL for `changes` applied to the current state (a value of '' or null removes the parameter). */
export function stateURL(changes) {
  const query = new URLSearchParams(location.search);
  for (const [name, value] of Object.entries(changes)) {
    if (value === '' || value === null || value === undefined) query.delete(name); else query.set(name, value);
  }
  const text = query.toString();
  return location.pathname + (text ? '?' + text : '');
}

/** A refusal from the API: its HTTP status, error code and message. */
export class APIError extends Error {
  constructor(status, code, message) { super(message); this.status = status; this.code = code; }
}

const keyName = 'countersign.apiKey';
/** The API key entered in this tab, if any. */
export const session = {
  get key() { return sessionStorage.getItem(keyName); },
  set key(value) { if (value) sessionStorage.setItem(keyName, value); else sessionStorage.removeItem(keyName); },
};

/** GET /v1/`path` with `parameters` (empty ones left out) and the bearer key; the parsed JSON, or an APIError. */
export async function api(path, parameters = {}) {
  const url = new URL('/v1/' + path, location.origin);
  for (const [name, value] of Object.entries(parameters)) {
    if (value !== '' && value !== null && value !== undefined) url.searchParams.set(name, value);
  }
  const response = await fetch(url, { headers: { Authorization: 'Bearer ' + (session.key || ''), Accept: 'application/json' } });
  const body = await response.json().catch(() => ({}));
  if (!response.ok) throw new APIError(response.status, body.error || 'http_' + response.status, body.message || response.statusText);
  return body;
}

/** The report filters of the current state, as /v1/reports and /v1/intake take them. */
export function reportFilters(query, { uncounted = true } = {}) {
  const filters = {};
  for (const name of filterNames) if (query.get(name)) filters[name] = query.get(name);
  if (uncounted && filters.environment === 'development') filters.include_uncounted = 'true';
  return filters;
}

/**
 * The server's Prometheus metrics as { name: [{ labels, value }] }, or null when the server protects /metrics and this
 * key lacks the metrics scope (the key is sent for that case).
 */
export async function metrics() {
  const response = await fetch('/metrics', { headers: { Authorization: 'Bearer ' + (session.key || '') } });
  if (!response.ok) return null;
  const text = await response.text();
  const samples = {};
  for (const line of text.split('\n')) {
    const match = /^([a-zA-Z_:][\w:]*)(\{([^}]*)\})?\s+(\S+)/.exec(line);
    if (!match) continue;
    const labels = Object.fromEntries([...(match[3] || '').matchAll(/(\w+)="([^"]*)"/g)].map((m) => [m[1], m[2]]));
    (samples[match[1]] ||= []).push({ labels, value: Number(match[4]) });
  }
  return samples;
}

const counts = new Intl.NumberFormat(undefined);
const shares = new Intl.NumberFormat(undefined, { style: 'percent', maximumFractionDigits: 1 });
const plain = new Intl.NumberFormat(undefined, { maximumFractionDigits: 2 });
/** Numbers for people: thousands separators, currency symbols, percentages. */
export const format = {
  count: (value) => (value === null || value === undefined ? '–' : counts.format(Number(value))),
  share: (value) => (value === null || value === undefined ? '–' : shares.format(Number(value))),
  money: (value, currency) => {
    if (value === null || value === undefined) return '–';
    if (!currency) return plain.format(Number(value));
    try { return new Intl.NumberFormat(undefined, { style: 'currency', currency }).format(Number(value)); } catch { return plain.format(Number(value)) + ' ' + currency; }
  },
  text: (value) => (value === null || value === undefined || value === '' ? '–' : String(value)),
  seconds: (value) => (value === null || value === undefined || Number.isNaN(value) ? '–' : plain.format(value * 1000) + ' ms'),
};

/** Creates an element with attributes and children. */
export function element(tag, attributes = {}, ...children) {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attributes)) {
    if (value === false || value === null || value === undefined) continue;
    if (name === 'text') node.textContent = value; else node.setAttribute(name, value === true ? '' : value);
  }
  for (const child of children) if (child !== null && child !== undefined) node.append(child);
  return node;
}

/** A titled section appended to `main`; `wide` spans the whole row. */
export function section(main, title, { wide = false, note } = {}) {
  const node = element('section', { class: wide ? 'wide' : null, 'aria-label': title }, element('h2', { text: title }));
  if (note) node.append(element('p', { class: 'note', text: note }));
  main.append(node);
  return node;
}

/** Headline figures; each carries its raw value in data-value for scripts. */
export function tiles(parent, items) {
  const node = element('div', { class: 'tiles' });
  for (const { id, label, value, shown } of items) {
    node.append(element('div', { class: 'tile', 'data-kpi': id, 'data-value': value ?? '' },
      element('div', { class: 'label', text: label }), element('div', { class: 'value', text: shown })));
  }
  parent.append(node);
}

/**
 * A sortable table of `rows` (objects) under `columns` ({ key, label, kind: text|count|share|money, currency(row) }),
 * with a CSV download of exactly those rows. The sort is part of the URL (`sort=<id>.<column>.<asc|desc>`).
 */
export function table(parent, { id, caption, columns, rows }) {
  const [sortTable, sortKey, sortDirection] = (readState().query.get('sort') || '').split('.');
  let sorted = rows.slice();
  const sortColumn = sortTable === id ? columns.find((column) => column.key === sortKey) : null;
  if (sortColumn) {
    const numeric = sortColumn.kind && sortColumn.kind !== 'text';
    sorted.sort((a, b) => {
      const x = a[sortKey], y = b[sortKey];
      const order = numeric ? Number(x ?? -Infinity) - Number(y ?? -Infinity) : String(x ?? '').localeCompare(String(y ?? ''));
      return sortDirection === 'desc' ? -order : order;
    });
  }
  const head = element('tr');
  for (const column of columns) {
    const numeric = column.kind && column.kind !== 'text';
    const direction = sortColumn === column ? (sortDirection === 'desc' ? 'descending' : 'ascending') : null;
    const button = element('button', { type: 'button', text: column.label });
    button.addEventListener('click', () => {
      const next = sortColumn === column && sortDirection !== 'desc' ? 'desc' : 'asc';
      history.pushState(null, '', stateURL({ sort: `${id}.${column.key}.${next}` }));
      window.dispatchEvent(new Event('countersign:navigate'));
    });
    head.append(element('th', { scope: 'col', class: numeric ? 'number' : null, 'aria-sort': direction }, button));
  }
  const body = element('tbody');
  for (const row of sorted) {
    const line = element('tr');
    for (const column of columns) {
      const value = row[column.key];
      const shown = column.kind === 'count' ? format.count(value)
        : column.kind === 'share' ? format.share(value)
        : column.kind === 'money' ? format.money(value, column.currency ? column.currency(row) : row.currency)
        : format.text(value);
      const numeric = column.kind && column.kind !== 'text';
      line.append(element(column === columns[0] ? 'th' : 'td', { scope: column === columns[0] ? 'row' : null, class: numeric ? 'number' : null,
        'data-column': column.key, 'data-value': value ?? '' }, shown));
    }
    body.append(line);
  }
  if (!rows.length) body.append(element('tr', {}, element('td', { colspan: columns.length, text: 'No rows for these filters.' })));
  const tableNode = element('table', { id, 'data-rows': rows.length }, element('caption', { text: caption }), element('thead', {}, head), body);
  const download = element('button', { type: 'button', text: 'Download CSV' });
  download.addEventListener('click', () => downloadCSV(id, columns, sorted));
  parent.append(element('div', { class: 'table-wrap' }, tableNode), element('div', { class: 'actions' }, download));
  return tableNode;
}

/**
 * CSV text (RFC 4180) of `rows` under `columns`, raw values as the API gave them. As the server's CSV does, text that a
 * spreadsheet would run as a formula (it begins with =, +, -, @, a tab or a carriage return) gets a leading ' and
 * quotes: much of it comes from whoever sent the postback. Numbers are written unchanged.
 */
export function csv(columns, rows) {
  const field = (value) => {
    const text = value === null || value === undefined ? '' : String(value);
    const formula = typeof value === 'string' && /^[=+\-@\t\r]/.test(text);
    return formula || /[",\r\n]/.test(text) ? '"' + (formula ? "'" : '') + text.replaceAll('"', '""') + '"' : text;
  };
  return [columns.map((column) => field(column.key)).join(','), ...rows.map((row) => columns.map((column) => field(row[column.key])).join(','))].join('\r\n') + '\r\n';
}

function downloadCSV(id, columns, rows) {
  const link = element('a', { href: URL.createObjectURL(new Blob([csv(columns, rows)], { type: 'text/csv' })), download: `${id}.csv` });
  document.body.append(link);
  link.click();
  link.remove();
}

const palette = ['#1f5fbf', '#d9822b', '#2e9e5b', '#b3261e', '#7b4fb5', '#8c6d31', '#0f8b8d', '#c2418a', '#5a6572', '#9aa5b1'];
/** A Chart.js chart in `parent`, labelled for screen readers; `config` is Chart.js's own. */
export function chart(parent, id, label, config) {
  const canvas = element('canvas', { id, role: 'img', 'aria-label': label });
  parent.append(element('div', { class: 'chart' }, canvas));
  config.data.datasets.forEach((dataset, index) => {
    dataset.backgroundColor ??= palette[index % palette.length];
    dataset.borderColor ??= palette[index % palette.length];
  });
  config.options = { responsive: true, maintainAspectRatio: false, animation: false, ...config.options };
  return new window.Chart(canvas, config);
}

/**
 * Series for a chart from report rows: one dataset per `seriesKey` value, one point per `labelKey` value, `valueKey`
 * summed (rows differing only in other dimensions, such as currency, add up).
 */
export function series(rows, labelKey, seriesKey, valueKey, seriesName = (value) => format.text(value)) {
  const labels = [...new Set(rows.map((row) => row[labelKey]))].sort();
  const names = [...new Set(rows.map((row) => row[seriesKey]))].sort((a, b) => String(a).localeCompare(String(b)));
  const datasets = names.map((name) => ({
    label: seriesName(name),
    data: labels.map((label) => rows.filter((row) => row[labelKey] === label && row[seriesKey] === name).reduce((sum, row) => sum + Number(row[valueKey] || 0), 0)),
  }));
  return { labels: labels.map((label) => format.text(label)), datasets };
}

/** The sum of `key` over `rows`. */
export const total = (rows, key) => rows.reduce((sum, row) => sum + Number(row[key] || 0), 0);
