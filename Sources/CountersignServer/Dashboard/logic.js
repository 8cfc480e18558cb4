// The dashboard's pure functions: date ranges, comparisons, chart series, top-N and colours. No DOM and no
// fetch, so node's test runner checks them (Tests/Dashboard/logic.test.mjs).

/** A day (YYYY-MM-DD) moved by `days` days. */
export function addDays(day, days) {
  const date = new Date(day + 'T00:00:00Z');
  date.setUTCDate(date.getUTCDate() + days);
  return date.toISOString().slice(0, 10);
}

/** Today in `zone` (an IANA name; UTC when empty), as YYYY-MM-DD, at `now`. */
export function today(zone, now = new Date()) {
  try {
    return new Intl.DateTimeFormat('en-CA', { timeZone: zone || 'UTC', year: 'numeric', month: '2-digit', day: '2-digit' }).format(now);
  } catch {
    return now.toISOString().slice(0, 10);
  }
}

/** The date presets, in the order the picker shows them. */
export const presets = {
  yesterday: 'Yesterday',
  '7d': 'Last 7 days',
  '30d': 'Last 30 days',
  '90d': 'Last 90 days',
  mtd: 'Month to date',
  custom: 'Custom',
};

/**
 * The days a preset covers, `from` and `to` both included, on `day` (today in the report's zone): the last N days end
 * today; yesterday is one day; month to date runs from the 1st. Null for `custom` or an unknown name.
 */
export function presetRange(name, day) {
  const last = { '7d': 7, '30d': 30, '90d': 90 }[name];
  if (last) return { from: addDays(day, -(last - 1)), to: day };
  if (name === 'yesterday') return { from: addDays(day, -1), to: addDays(day, -1) };
  if (name === 'mtd') return { from: day.slice(0, 8) + '01', to: day };
  return null;
}

/**
 * The API's range for days the user picked: the API's `to` is exclusive, the picker's last day is included, so the
 * API gets the day after it. Empty ends stay open.
 */
export function apiRange({ from, to }) {
  return { from: from || '', to: to ? addDays(to, 1) : '' };
}

/** The period of the same length just before `from`..`to` (both included), or null when either end is open. */
export function previousRange({ from, to }) {
  if (!from || !to) return null;
  const days = Math.round((Date.parse(to + 'T00:00:00Z') - Date.parse(from + 'T00:00:00Z')) / 86400000) + 1;
  return { from: addDays(from, -days), to: addDays(from, -1) };
}

/** The change from `previous` to `current` as a share (0.25 for +25%), or null when there is nothing to compare. */
export function change(current, previous) {
  if (current === null || current === undefined || previous === null || previous === undefined) return null;
  const before = Number(previous), now = Number(current);
  if (!Number.isFinite(before) || !Number.isFinite(now) || before === 0) return null;
  return (now - before) / Math.abs(before);
}

/** A value as a label: '–' for none. */
export function text(value) {
  return value === null || value === undefined || value === '' ? '–' : String(value);
}

/**
 * Series for a chart from report rows: one dataset per `seriesKey` value (named by `name`), one point per `labelKey`
 * value (numbers in numeric order), `valueKey` summed (rows differing only in other dimensions, such as currency, add
 * up).
 */
export function series(rows, labelKey, seriesKey, valueKey, name = text) {
  const labels = [...new Set(rows.map((row) => row[labelKey]))].sort((a, b) => (typeof a === 'number' && typeof b === 'number' ? a - b : String(a).localeCompare(String(b))));
  const names = [...new Set(rows.map((row) => row[seriesKey]))].sort((a, b) => String(a).localeCompare(String(b)));
  const datasets = names.map((value) => ({
    label: name(value),
    data: labels.map((label) => rows.filter((row) => row[labelKey] === label && row[seriesKey] === value).reduce((sum, row) => sum + Number(row[valueKey] || 0), 0)),
  }));
  return { labels: labels.map(text), datasets };
}

/** The `count` rows with the most `key` (ties by their order), most first. */
export function top(rows, key, count) {
  return rows.map((row, index) => ({ row, index })).sort((a, b) => Number(b.row[key] || 0) - Number(a.row[key] || 0) || a.index - b.index)
    .slice(0, count).map(({ row }) => row);
}

/** Whether a chart's data has anything to draw. */
export function hasData(data) {
  return data.labels.length > 0 && data.datasets.some((dataset) => dataset.data.some((value) => value !== null && Number(value) !== 0));
}

/**
 * `count` distinct colours: the Okabe-Ito palette (told apart by people with any common colour blindness) first, then
 * hues spread evenly so no two series share one.
 */
export function colours(count) {
  const safe = ['#0072B2', '#E69F00', '#009E73', '#CC79A7', '#56B4E9', '#D55E00', '#F0E442', '#000000'];
  if (count <= safe.length) return safe.slice(0, count);
  return [...safe, ...Array.from({ length: count - safe.length }, (_, index) => `hsl(${Math.round((index * 360) / (count - safe.length))}, 55%, 45%)`)];
}

/**
 * Every page of a paged report, joined: `fetchPage(after)` answers one page (`after` undefined for the first) whose
 * `next_after` is the cursor of the next, null on the last. At most `maxPages` pages are read. The answer is the first
 * page's members with every page's rows, and `next_after` still set when pages were left unread.
 */
export async function allPages(fetchPage, maxPages) {
  const first = await fetchPage(undefined);
  const rows = first.rows.slice();
  let next = first.next_after ?? null;
  for (let read = 1; next !== null && read < maxPages; read += 1) {
    const page = await fetchPage(next);
    for (const row of page.rows) rows.push(row);
    next = page.next_after ?? null;
  }
  return { ...first, rows, next_after: next };
}
