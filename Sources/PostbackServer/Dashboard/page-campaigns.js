// Campaigns: ad network → campaign → ad group → creative with names, windows 0-2, fine, coarse and missing values,
// events and revenue (low-high, per currency).
import { api, chart, element, format, reportFilters, section, series, stateURL, table } from './core.js';

const levels = {
  campaign: ['ad_network', 'ad_network_name', 'campaign', 'campaign_name'],
  ad_group: ['ad_network', 'ad_network_name', 'campaign', 'campaign_name', 'ad_group', 'ad_group_name'],
  creative: ['ad_network', 'ad_network_name', 'campaign', 'campaign_name', 'ad_group', 'ad_group_name', 'creative', 'creative_name'],
};
const labels = {
  ad_network: 'Ad network id', ad_network_name: 'Ad network', campaign: 'Campaign', campaign_name: 'Campaign name',
  ad_group: 'Ad group', ad_group_name: 'Ad group name', creative: 'Creative', creative_name: 'Creative name',
};
const valueKinds = { fine: 'Fine value', coarse: 'Coarse value only', none: 'No value' };

export default {
  title: 'Campaigns',
  async render(main, query) {
    const filters = reportFilters(query);
    const level = levels[query.get('level')] ? query.get('level') : 'campaign';
    const [sources, windows] = await Promise.all([
      api('reports', { ...filters, by: levels[level].join(',') }),
      api('reports', { ...filters, by: 'window,value_kind' }),
    ]);

    const tree = section(main, 'Campaigns', { wide: true, note: 'Names come from the name registry, then the app\'s schema, then Apple Ads placements, else the digits. Revenue is a low–high range in each row\'s currency.' });
    const picker = element('p', {}, 'Down to: ');
    for (const name of Object.keys(levels)) {
      const link = element('a', { href: stateURL({ level: name }), 'aria-current': name === level ? 'true' : null, text: name.replace('_', ' ') });
      link.addEventListener('click', (event) => {
        event.preventDefault();
        history.pushState(null, '', link.getAttribute('href'));
        window.dispatchEvent(new Event('countersign:navigate'));
      });
      picker.append(link, ' ');
    }
    tree.append(picker);
    table(tree, { id: 'campaigns', caption: `Counted conversions by ${level.replace('_', ' ')}`, rows: sources.rows, columns: [
      ...levels[level].map((key) => ({ key, label: labels[key] })),
      { key: 'currency', label: 'Currency' },
      { key: 'postbacks', label: 'Postbacks', kind: 'count' }, { key: 'installs', label: 'Installs', kind: 'count' },
      { key: 're_engagements', label: 'Re-engagements', kind: 'count' }, { key: 'events', label: 'Events', kind: 'count' },
      { key: 'revenue_min', label: 'Revenue (low)', kind: 'money' }, { key: 'revenue_max', label: 'Revenue (high)', kind: 'money' },
    ] });

    const revenue = section(main, 'Revenue by campaign', { note: 'Middle of each range; one bar group per currency, never added across currencies.' });
    const campaignRows = sources.rows.map((row) => ({ ...row, label: `${row.ad_network_name} · ${row.campaign_name}` }));
    chart(revenue, 'chart-revenue', 'Revenue by campaign and currency', {
      type: 'bar', data: series(campaignRows, 'label', 'currency', 'revenue_mid'),
      options: { indexAxis: 'y', scales: { x: { beginAtZero: true } },
        plugins: { tooltip: { callbacks: { label: (item) => `${item.dataset.label}: ${format.money(item.raw, item.dataset.label)}` } } } },
    });

    const byWindow = section(main, 'Windows and conversion values', { note: 'Fine values, coarse values only, or none (Apple withholds values below its crowd-anonymity thresholds).' });
    chart(byWindow, 'chart-windows', 'Postbacks by window and kind of conversion value', {
      type: 'bar', data: series(windows.rows, 'window', 'value_kind', 'postbacks', (kind) => valueKinds[kind] || kind),
      options: { scales: { x: { stacked: true, title: { display: true, text: 'Window' } }, y: { stacked: true, beginAtZero: true } } },
    });
    table(byWindow, { id: 'windows', caption: 'Postbacks by window, kind of value and currency', rows: windows.rows, columns: [
      { key: 'window', label: 'Window', kind: 'count' }, { key: 'value_kind', label: 'Value' }, { key: 'currency', label: 'Currency' },
      { key: 'postbacks', label: 'Postbacks', kind: 'count' }, { key: 'events', label: 'Events', kind: 'count' },
      { key: 'revenue_min', label: 'Revenue (low)', kind: 'money' }, { key: 'revenue_max', label: 'Revenue (high)', kind: 'money' },
    ] });
  },
};
