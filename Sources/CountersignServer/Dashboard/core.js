// The dashboard's shared parts: the URL state, the /v1 client, number formats, sections, tables and charts.
// Pages (page-*.js) build their views from these and read nothing but the public API; pure logic is in logic.js.
import { allPages, apiRange, change, colours, hasData, presetRange, previousRange, series as seriesOf, today } from './logic.js';

/**
 * The filters every page may apply; each lives in the URL's query string. `from` and `to` are the first and the last
 * day shown, both included (`range` names a preset that sets them); the API's exclusive end is made from them.
 */
export const filterNames = ['range', 'app', 'ad_network', 'from', 'to', 'tz', 'protocol', 'window', 'environment'];

/** The days the state shows, both ends included: a preset's, computed in the report's zone, or the custom ones. */
export function shownRange(query) {
  return presetRange(query.get('range') || '', today(query.get('tz'))) || { from: query.get('from') || '', to: query.get('to') || '' };
}

/** The period before the one shown, as API filters, or null when the shown one is open-ended. */
export function previousFilters(query, filters) {
  const before = previousRange(shownRange(query));
  return before ? { ...filters, ...apiRange(before) } : null;
}

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
/**
 * The API key entered in this tab, if any; or `proxied` when a proxy in front of the server signs every request in
 * (it sets the Authorization header, as for a wall screen: docs/dashboard.md#a-wall-screen), so no key is typed.
 */
export const session = {
  get key() { return sessionStorage.getItem(keyName); },
  set key(value) { if (value) sessionStorage.setItem(keyName, value); else sessionStorage.removeItem(keyName); },
  proxied: false,
  get signedIn() { return Boolean(this.key) || this.proxied; },
};

/** The headers that sign a request in: the typed key, or none when a proxy sets its own. */
export function authorization() {
  return session.key ? { Authorization: 'Bearer ' + session.key } : {};
}

/** The URL of GET /v1/`path` with `parameters`, empty ones left out. */
function apiURL(path, parameters) {
  const url = new URL('/v1/' + path, location.origin);
  for (const [name, value] of Object.entries(parameters)) {
    if (value !== '' && value !== null && value !== undefined) url.searchParams.set(name, value);
  }
  return url;
}

/**
 * GET /v1/`path` with `parameters` (empty ones left out) and the bearer key; the parsed JSON, or an APIError. The
 * answer remembers the request (`source`, not a member), so a table drawn from it downloads the same report as CSV.
 */
export async function api(path, parameters = {}) {
  // A heavy report refused because this key or the server runs enough of them (429 too_many_requests, 503 server_busy)
  // is asked again after its Retry-After, twice at most: a page asks several reports at once.
  let response, body;
  for (let attempt = 0; ; attempt++) {
    response = await fetch(apiURL(path, parameters), { headers: { ...authorization(), Accept: 'application/json' } });
    body = await response.json().catch(() => ({}));
    const busy = body.error === 'too_many_requests' || body.error === 'server_busy';
    if (!busy || attempt === 2) break;
    const seconds = Math.min(10, Math.max(1, Number(response.headers.get('Retry-After')) || 1));
    await new Promise((resolve) => setTimeout(resolve, seconds * 1000));
  }
  if (!response.ok) throw new APIError(response.status, body.error || 'http_' + response.status, body.message || response.statusText);
  Object.defineProperty(body, 'source', { value: { path, parameters }, enumerable: false });
  return body;
}

/**
 * A paged report whole: GET /v1/`path` as api() asks it, following `next_after` through at most `maxPages` pages and
 * joining their rows (allPages in logic.js); `next_after` stays set when pages were left unread. A table drawn from it
 * downloads every page as one CSV.
 */
export async function apiAll(path, parameters, maxPages) {
  const body = await allPages((after) => api(path, { ...parameters, after }), maxPages);
  Object.defineProperty(body, 'source', { value: { path, parameters, pages: maxPages }, enumerable: false });
  return body;
}

/** The report filters of the current state, as /v1/reports and /v1/intake take them (`to` made exclusive). */
export function reportFilters(query, { uncounted = true } = {}) {
  const filters = {};
  for (const name of filterNames) if (name !== 'range' && name !== 'from' && name !== 'to' && query.get(name)) filters[name] = query.get(name);
  const range = apiRange(shownRange(query));
  if (range.from) filters.from = range.from;
  if (range.to) filters.to = range.to;
  if (uncounted && filters.environment === 'development') filters.include_uncounted = 'true';
  return filters;
}

/**
 * The server's Prometheus metrics as { name: [{ labels, value }] }, or null when the server protects /metrics and this
 * key lacks the metrics scope (the key is sent for that case).
 */
export async function metrics() {
  const response = await fetch('/metrics', { headers: authorization() });
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
const signed = new Intl.NumberFormat(undefined, { style: 'percent', maximumFractionDigits: 1, signDisplay: 'exceptZero' });
const shares = new Intl.NumberFormat(undefined, { style: 'percent', maximumFractionDigits: 1 });
const plain = new Intl.NumberFormat(undefined, { maximumFractionDigits: 2 });
/** Numbers for people: thousands separators, currency symbols, percentages. */
const moments = new Intl.DateTimeFormat(undefined, { month: 'short', day: 'numeric', hour: '2-digit', minute: '2-digit', hourCycle: 'h23', timeZoneName: 'short' });

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
  /** An ISO 8601 time in the viewer's own zone, named ("Nov 28, 17:40 CET"); the ISO text stays the cell's value. */
  time: (value) => {
    const moment = value ? new Date(value) : null;
    return !moment || Number.isNaN(moment.getTime()) ? format.text(value) : moments.format(moment);
  },
  /** The change against the previous period, as "+12% vs previous period", or '' when there is none. */
  change: (current, previous) => {
    const share = change(current, previous);
    return share === null ? '' : `${signed.format(share)} vs previous period`;
  },
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

/**
 * Headline figures; each carries its raw value in data-value for scripts, and with `previous` the change against the
 * previous period (data-previous).
 */
export function tiles(parent, items) {
  const node = element('div', { class: 'tiles' });
  for (const { id, label, value, shown, previous, detail, lowerIsBetter = false } of items) {
    const delta = previous === undefined ? '' : format.change(value, previous);
    const share = change(value, previous);
    // Green when the figure moved the good way: up for installs and revenue, down for costs, copies and missing values.
    const better = lowerIsBetter ? share < 0 : share > 0, worse = lowerIsBetter ? share > 0 : share < 0;
    node.append(element('div', { class: 'tile', 'data-kpi': id, 'data-value': value ?? '', 'data-previous': previous ?? '' },
      element('div', { class: 'label', text: label }), element('div', { class: 'value', text: shown }),
      detail ? element('div', { class: 'detail', text: detail }) : null,
      delta ? element('div', { class: better ? 'change better' : worse ? 'change worse' : 'change', text: delta }) : null));
  }
  parent.append(node);
}

/** Links that set one page parameter (`name`) to each of `choices` ({ value: label }), the current one marked. */
export function picker(parent, text, name, choices, current) {
  const line = element('p', { class: 'picker', 'data-picker': name }, text);
  for (const [value, label] of Object.entries(choices)) {
    const link = element('a', { href: stateURL({ [name]: value || null }), 'aria-current': value === current ? 'true' : null, text: label });
    link.addEventListener('click', (event) => {
      event.preventDefault();
      history.pushState(null, '', link.getAttribute('href'));
      window.dispatchEvent(new Event('countersign:navigate'));
    });
    line.append(link, ' ');
  }
  parent.append(line);
}

/** How pages name their day basis. */
export const basisNames = { install: 'estimated install day', arrival: 'arrival day' };

/** The page's day basis from the URL: the estimated install day, as Performance counts, unless `basis=arrival`. */
export function readBasis(query) {
  return query.get('basis') === 'arrival' ? 'arrival' : 'install';
}

/** The links that choose the page's day basis, the current one marked. */
export function basisPicker(parent, basis) {
  picker(parent, 'Days by: ', 'basis', { '': basisNames.install, arrival: basisNames.arrival }, basis === 'install' ? '' : basis);
}

/** A message where a chart or table would be empty, saying what to do. */
export function emptyState(parent, text) {
  parent.append(element('p', { class: 'empty', role: 'status', text }));
}

/** What an empty view says: nothing in the range, and how to get something. */
export const emptyText = 'Nothing in these dates and filters. Widen the dates, clear a filter, or fill a trial database: countersign simulate --days 30 (docs/quickstart.md).';

/**
 * A sortable table of `rows` (objects) under `columns` ({ key, label, kind: text|count|share|money, currency(row),
 * title: the key shown on hover}); `report` is the API answer the rows are, whose report the Download CSV button
 * fetches from the API as CSV (the server writes every CSV); a table whose rows the page picks from a report, or builds
 * itself, has no download, since the API's CSV would not be what it shows. `empty` is
 * what it says without rows (by default: widen the dates or fill a trial). The sort is part of the URL
 * (`sort=<id>.<column>.<asc|desc>`).
 */
export function table(parent, { id, caption, columns, rows, report, sort, empty = emptyText }) {
  const [sortTable, sortKey, sortDirection] = sortOf(id, sort);
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
        : column.kind === 'time' ? format.time(value)
        : format.text(value);
      const numeric = column.kind && column.kind !== 'text' && column.kind !== 'time';
      line.append(element(column === columns[0] ? 'th' : 'td', { scope: column === columns[0] ? 'row' : null, class: numeric ? 'number' : null,
        'data-column': column.key, 'data-value': value ?? '', title: column.title ? row[column.title] : null }, shown));
    }
    body.append(line);
  }
  if (!rows.length) body.append(element('tr', {}, element('td', { colspan: columns.length, class: 'empty', text: empty })));
  const tableNode = element('table', { id, 'data-rows': rows.length }, element('caption', { text: caption }), element('thead', {}, head), body);
  parent.append(element('div', { class: 'table-wrap' }, tableNode));
  if (report?.source) {
    const download = element('button', { type: 'button', text: 'Download CSV' });
    download.addEventListener('click', () => downloadCSV(id, report.source).catch((error) => download.replaceWith(element('p', { class: 'error', text: error.message }))));
    parent.append(element('div', { class: 'actions' }, download));
  }
  return tableNode;
}

/** The sort of table `id`: the URL's (`sort=<id>.<column>.<asc|desc>`), else the table's default `[column, direction]`. */
function sortOf(id, fallback) {
  const parts = (readState().query.get('sort') || '').split('.');
  if (parts[0] === id) return parts;
  return fallback ? [id, ...fallback] : parts;
}

/**
 * Saves the API's CSV of the report `source` names as `<id>.csv`; a report read whole (apiAll) is fetched through as
 * many pages (each page's `Next-After`), its header line kept once.
 */
async function downloadCSV(id, { path, parameters, pages = 1 }) {
  const parts = [];
  let after;
  for (let read = 0; read < pages; read += 1) {
    const response = await fetch(apiURL(path, { ...parameters, format: 'csv', after }), { headers: { ...authorization(), Accept: 'text/csv' } });
    if (!response.ok) {
      const body = await response.json().catch(() => ({}));
      throw new APIError(response.status, body.error || 'http_' + response.status, body.message || response.statusText);
    }
    const text = await response.text();
    parts.push(read === 0 ? text : text.slice(text.indexOf('\r\n') + 2));
    after = response.headers.get('Next-After');
    if (!after) break;
  }
  const link = element('a', { href: URL.createObjectURL(new Blob(parts, { type: 'text/csv' })), download: `${id}.csv` });
  document.body.append(link);
  link.click();
  link.remove();
}

/**
 * A Chart.js chart in `parent`, labelled for screen readers; `config` is Chart.js's own. Series without colours get
 * distinct ones (logic.js); a chart with nothing to draw is replaced by a message saying what to do.
 */
export function chart(parent, id, label, config) {
  if (!hasData(config.data)) {
    parent.append(element('p', { class: 'empty', role: 'status', id, 'data-empty': 'true', text: emptyText }));
    return null;
  }
  const canvas = element('canvas', { id, role: 'img', 'aria-label': label });
  parent.append(element('div', { class: 'chart' }, canvas));
  const palette = colours(config.data.datasets.length);
  const { young, ...rest } = config;
  config = rest;
  config.data.datasets.forEach((dataset, index) => {
    dataset.backgroundColor ??= palette[index];
    dataset.borderColor ??= palette[index];
    if (young) fadeYoung(dataset, config.data.labels, young, config.type);
  });
  config.options = { responsive: true, maintainAspectRatio: false, animation: false, ...config.options };
  return new window.Chart(canvas, config);
}

/**
 * Fades the days `young` holds (day → window_0_maturity, faded unless closed) in a dataset whose labels are days: a
 * bar in a third of its colour, a line's point likewise and the line into it dashed, so each series stays told apart
 * while its young days stand out.
 */
function fadeYoung(dataset, days, young, type) {
  const isYoung = (day) => Boolean(young.get(day)) && young.get(day) !== 'closed';
  const colour = dataset.backgroundColor;
  const faded = days.map((day) => (isYoung(day) ? colour + '55' : colour));
  if (type === 'line') {
    dataset.pointBackgroundColor = faded;
    dataset.pointBorderColor = faded;
    dataset.segment = { borderDash: (context) => (isYoung(days[context.p1DataIndex]) ? [6, 4] : undefined) };
  } else {
    dataset.backgroundColor = faded;
  }
}

/** Day → window_0_maturity for report filters, from GET /v1/performance by day (the filters it takes). */
export async function dayMaturity(filters) {
  const chosen = Object.fromEntries(['app', 'ad_network', 'from', 'to', 'tz', 'basis'].filter((name) => filters[name]).map((name) => [name, filters[name]]));
  const days = await apiAll('performance', { ...chosen, by: 'day' }, 20);
  return new Map(days.rows.map((row) => [row.day, row.window_0_maturity]));
}

/**
 * Series for a chart from report rows: one dataset per `seriesKey` value, one point per `labelKey` value, `valueKey`
 * summed (rows differing only in other dimensions, such as currency, add up).
 */
export function series(rows, labelKey, seriesKey, valueKey, seriesName = (value) => format.text(value)) {
  return seriesOf(rows, labelKey, seriesKey, valueKey, seriesName);
}

/** The sum of `key` over `rows`. */
export const total = (rows, key) => rows.reduce((sum, row) => sum + Number(row[key] || 0), 0);
