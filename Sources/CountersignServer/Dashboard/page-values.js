// Conversion values: how fine values (0-63) spread in window 0, coarse values per window, and the share of postbacks
// without a value per crowd-anonymity tier (Apple withholds values below its thresholds).
import { api, basisPicker, chart, readBasis, reportFilters, section, table, total } from './core.js';

const coarseLevels = ['low', 'medium', 'high'];
const coarseColours = { low: '#56B4E9', medium: '#0072B2', high: '#E69F00' };

export default {
  title: 'Values',
  async render(main, query) {
    const basis = readBasis(query);
    const filters = { ...reportFilters(query), basis };
    basisPicker(main, basis);
    const [values, tiers] = await Promise.all([
      api('reports', { ...filters, by: 'window,value_kind,value' }),
      api('reports', { ...filters, by: 'tier' }),
    ]);

    const fine = section(main, 'Fine values in window 0', { wide: true,
      note: 'Postbacks of the first window by fine conversion value, 0 to 63 (unsigned: as the device sent it). Pick an app to read the values against its schema (Events page).' });
    const windowZero = values.rows.filter((row) => row.value_kind === 'fine' && Number(row.window) === 0);
    const counts = Array.from({ length: 64 }, (_, value) => total(windowZero.filter((row) => Number(row.value) === value), 'postbacks'));
    chart(fine, 'chart-fine-values', 'Postbacks by fine conversion value in window 0', {
      type: 'bar',
      data: { labels: counts.map((_, value) => String(value)), datasets: [{ label: 'Postbacks', data: counts }] },
      options: { plugins: { legend: { display: false } }, scales: { x: { title: { display: true, text: 'Fine value' }, ticks: { autoSkip: false, maxRotation: 0, font: { size: 9 } } }, y: { beginAtZero: true } } },
    });

    const coarse = section(main, 'Coarse values by window', { note: 'Postbacks that carry only a coarse value (low, medium, high), per window.' });
    const coarseRows = values.rows.filter((row) => row.value_kind === 'coarse');
    const windows = [0, 1, 2];
    chart(coarse, 'chart-coarse-values', 'Postbacks by coarse value and window', {
      type: 'bar',
      data: { labels: windows.map((window) => `Window ${window}`), datasets: coarseLevels.map((level) => ({
        label: level, backgroundColor: coarseColours[level], borderColor: coarseColours[level],
        data: windows.map((window) => total(coarseRows.filter((row) => Number(row.window) === window && row.value === level), 'postbacks')),
      })) },
      options: { scales: { x: { stacked: true }, y: { stacked: true, beginAtZero: true } } },
    });
    table(coarse, { id: 'coarse-values', caption: 'Coarse values by window and currency', rows: coarseRows, columns: [
      { key: 'window', label: 'Window', kind: 'count' }, { key: 'value', label: 'Coarse value' }, { key: 'currency', label: 'Currency' },
      { key: 'postbacks', label: 'Postbacks', kind: 'count' }, { key: 'revenue_min', label: 'Revenue (low)', kind: 'money' },
      { key: 'revenue_max', label: 'Revenue (high)', kind: 'money' },
    ] });

    const nulls = section(main, 'Without a value, by tier', { note: 'The share of postbacks without any conversion value, per crowd-anonymity tier (the lowest tier the postback\'s fields allow).' });
    const tierValues = [...new Set(tiers.rows.map((row) => Number(row.tier)))].sort((a, b) => a - b);
    const shares = tierValues.map((tier) => {
      const rows = tiers.rows.filter((row) => Number(row.tier) === tier);
      const postbacks = total(rows, 'postbacks');
      return postbacks ? rows.reduce((sum, row) => sum + Number(row.share_without_value) * Number(row.postbacks), 0) / postbacks : 0;
    });
    chart(nulls, 'chart-null-share', 'Share without a conversion value by tier', {
      type: 'bar',
      data: { labels: tierValues.map((tier) => `Tier ${tier}`), datasets: [{ label: 'Share without a value', data: shares, backgroundColor: '#9aa5b1' }] },
      options: { plugins: { legend: { display: false } }, scales: { y: { beginAtZero: true, max: 1, ticks: { format: { style: 'percent' } } } } },
    });
    table(nulls, { id: 'null-share', caption: 'Postbacks and the share without a value, by tier and currency', rows: tiers.rows, report: tiers, columns: [
      { key: 'tier', label: 'Tier', kind: 'count' }, { key: 'currency', label: 'Currency' }, { key: 'postbacks', label: 'Postbacks', kind: 'count' },
      { key: 'share_without_value', label: 'Without a value', kind: 'share' },
    ] });
  },
};
