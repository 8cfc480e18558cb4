// The dashboard's pure functions, under node's test runner: `node --test Tests/Dashboard` (make test runs it).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { addDays, allPages, apiRange, change, colours, hasData, presetRange, previousRange, series, today, top } from '../../Sources/CountersignServer/Dashboard/logic.js';

test('days move across months, years and leap days', () => {
  assert.equal(addDays('2026-11-30', 1), '2026-12-01');
  assert.equal(addDays('2026-12-31', 1), '2027-01-01');
  assert.equal(addDays('2028-03-01', -1), '2028-02-29');
  assert.equal(addDays('2026-03-29', 1), '2026-03-30', 'a daylight-saving change does not skip a day');
});

test('today is the report zone\'s day', () => {
  const now = new Date('2026-11-25T23:30:00Z');
  assert.equal(today('UTC', now), '2026-11-25');
  assert.equal(today('Asia/Tokyo', now), '2026-11-26');
  assert.equal(today('America/Los_Angeles', now), '2026-11-25');
  assert.equal(today('', now), '2026-11-25');
});

test('presets cover the days they name, both ends included', () => {
  assert.deepEqual(presetRange('yesterday', '2026-11-25'), { from: '2026-11-24', to: '2026-11-24' });
  assert.deepEqual(presetRange('7d', '2026-11-25'), { from: '2026-11-19', to: '2026-11-25' });
  assert.deepEqual(presetRange('30d', '2026-11-25'), { from: '2026-10-27', to: '2026-11-25' });
  assert.deepEqual(presetRange('90d', '2026-11-25'), { from: '2026-08-28', to: '2026-11-25' });
  assert.deepEqual(presetRange('mtd', '2026-11-25'), { from: '2026-11-01', to: '2026-11-25' });
  assert.equal(presetRange('custom', '2026-11-25'), null);
});

test('the API gets the day after the last day shown, since its end is exclusive', () => {
  assert.deepEqual(apiRange({ from: '2026-11-24', to: '2026-11-24' }), { from: '2026-11-24', to: '2026-11-25' });
  assert.deepEqual(apiRange({ from: '', to: '' }), { from: '', to: '' });
  assert.deepEqual(apiRange({ from: '2026-11-01', to: '' }), { from: '2026-11-01', to: '' });
});

test('the previous period has the same length and ends the day before', () => {
  assert.deepEqual(previousRange({ from: '2026-11-19', to: '2026-11-25' }), { from: '2026-11-12', to: '2026-11-18' });
  assert.deepEqual(previousRange({ from: '2026-11-24', to: '2026-11-24' }), { from: '2026-11-23', to: '2026-11-23' });
  assert.deepEqual(previousRange({ from: '2026-03-01', to: '2026-03-31' }), { from: '2026-01-29', to: '2026-02-28' });
  assert.equal(previousRange({ from: '', to: '2026-11-24' }), null);
});

test('a change needs something to compare with', () => {
  assert.equal(change(125, 100), 0.25);
  assert.equal(change(50, 100), -0.5);
  assert.equal(change(5, 0), null);
  assert.equal(change(null, 3), null);
  assert.equal(change('7.5', '5'), 0.5);
});

test('series add up rows that differ only elsewhere, in label order', () => {
  const rows = [
    { day: '2026-11-02', kind: 'a', n: 1, currency: 'USD' }, { day: '2026-11-02', kind: 'a', n: 2, currency: 'EUR' },
    { day: '2026-11-01', kind: 'b', n: 4 },
  ];
  const data = series(rows, 'day', 'kind', 'n');
  assert.deepEqual(data.labels, ['2026-11-01', '2026-11-02']);
  assert.deepEqual(data.datasets, [{ label: 'a', data: [0, 3] }, { label: 'b', data: [4, 0] }]);
  const numeric = series([{ v: 10, k: 'x', n: 1 }, { v: 9, k: 'x', n: 1 }], 'v', 'k', 'n');
  assert.deepEqual(numeric.labels, ['9', '10'], 'numbers sort as numbers');
});

test('top keeps the largest, ties in their order', () => {
  const rows = [{ id: 1, n: 3 }, { id: 2, n: 9 }, { id: 3, n: 3 }, { id: 4, n: 1 }];
  assert.deepEqual(top(rows, 'n', 3).map((row) => row.id), [2, 1, 3]);
  assert.deepEqual(top([], 'n', 3), []);
});

test('an empty chart is told apart', () => {
  assert.equal(hasData({ labels: [], datasets: [] }), false);
  assert.equal(hasData({ labels: ['a'], datasets: [{ data: [0] }] }), false);
  assert.equal(hasData({ labels: ['a'], datasets: [{ data: [null, 2] }] }), true);
});

test('colours never repeat', () => {
  for (const count of [1, 8, 9, 30]) {
    const list = colours(count);
    assert.equal(list.length, count);
    assert.equal(new Set(list).size, count);
  }
});

test('allPages follows next_after and joins the rows, within its page limit', async () => {
  const pages = { '': { rows: [{ n: 1 }, { n: 2 }], next_after: 'b', time_zone: 'UTC' }, b: { rows: [{ n: 3 }, { n: 4 }], next_after: 'c', time_zone: 'UTC' },
    c: { rows: [{ n: 5 }], next_after: null, time_zone: 'UTC' } };
  const asked = [];
  const fetchPage = async (after) => { asked.push(after); return pages[after ?? '']; };
  const all = await allPages(fetchPage, 10);
  assert.deepEqual(all.rows.map((row) => row.n), [1, 2, 3, 4, 5]);
  assert.equal(all.next_after, null, 'nothing left unread');
  assert.equal(all.time_zone, 'UTC', 'the first page\'s other members stay');
  assert.deepEqual(asked, [undefined, 'b', 'c'], 'each page asked with the cursor of the one before');
  const cut = await allPages(fetchPage, 2);
  assert.deepEqual(cut.rows.map((row) => row.n), [1, 2, 3, 4]);
  assert.equal(cut.next_after, 'c', 'the cursor of the first page left unread');
  const one = await allPages(async () => ({ rows: [{ n: 1 }] }), 5);
  assert.deepEqual(one, { rows: [{ n: 1 }], next_after: null }, 'an answer without next_after is one page');
  await assert.rejects(allPages(async (after) => { if (after) throw new Error('too_many_groups'); return pages['']; }, 3), /too_many_groups/,
    'a refused page is the answer\'s refusal');
});
