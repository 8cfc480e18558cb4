// Campaigns: app → ad network → campaign → ad group → creative with names, the top campaigns by installs and by
// revenue (one chart per currency), installs over time for the top campaigns, spend, eCPI and ROAS per campaign where
// spend is imported, windows 0-2 with fine, coarse and missing values, and the full table (sortable on every column;
// most installs first). One day basis for the page, as on the Overview and Performance.
import { api, apiAll, basisNames, basisPicker, chart, dayMaturity, format, picker, readBasis, reportFilters, section, series, table } from './core.js';
import { top } from './logic.js';

const levels = {
  campaign: ['app_name', 'ad_network', 'ad_network_name', 'campaign', 'campaign_name'],
  ad_group: ['app_name', 'ad_network', 'ad_network_name', 'campaign', 'campaign_name', 'ad_group', 'ad_group_name'],
  creative: ['app_name', 'ad_network', 'ad_network_name', 'campaign', 'campaign_name', 'ad_group', 'ad_group_name', 'creative', 'creative_name'],
};
const labels = {
  app_name: 'App', ad_network: 'Ad network id', ad_network_name: 'Ad network', campaign: 'Campaign', campaign_name: 'Campaign name',
  ad_group: 'Ad group', ad_group_name: 'Ad group name', creative: 'Creative', creative_name: 'Creative name',
};
const valueKinds = { fine: 'Fine value', coarse: 'Coarse value only', none: 'No value' };
/** Fine blue, coarse orange, none grey: "no value" never looks like a good result. */
const valueColours = { 'Fine value': '#0072B2', 'Coarse value only': '#E69F00', 'No value': '#9aa5b1' };

/** A campaign's name for a chart: app, network and campaign name. */
const campaignLabel = (row) => `${row.app_name} · ${row.ad_network_name} · ${row.campaign_name}`;

export default {
  title: 'Campaigns',
  async render(main, query) {
    const basis = readBasis(query);
    const filters = { ...reportFilters(query), basis };
    const level = levels[query.get('level')] ? query.get('level') : 'campaign';
    const moneyFilters = Object.fromEntries(['app', 'ad_network', 'from', 'to', 'tz', 'basis'].filter((name) => filters[name]).map((name) => [name, filters[name]]));
    const [sources, campaigns, windows, overTime, money, maturity] = await Promise.all([
      api('reports', { ...filters, by: levels[level].join(',') }),
      api('reports', { ...filters, by: levels.campaign.join(',') }),
      api('reports', { ...filters, by: 'window,value_kind' }),
      api('reports', { ...filters, by: 'day,app_name,ad_network_name,campaign_name' }),
      apiAll('performance', { ...moneyFilters, by: 'app_name,ad_network,ad_network_name,campaign' }, 20),
      dayMaturity(filters),
    ]);
    basisPicker(main, basis);

    const leaders = section(main, 'Top campaigns by installs', { note: 'The ten campaigns with the most installs (docs/metrics.md), one bar each.' });
    const topInstalls = top(campaigns.rows.filter((row) => Number(row.installs) > 0), 'installs', 10);
    chart(leaders, 'chart-top-installs', 'Top campaigns by installs', {
      type: 'bar',
      data: { labels: topInstalls.map(campaignLabel), datasets: [{ label: 'Installs', data: topInstalls.map((row) => Number(row.installs)) }] },
      options: { indexAxis: 'y', plugins: { legend: { display: false } }, scales: { x: { beginAtZero: true }, y: { ticks: { autoSkip: false } } } },
    });

    // Revenue: one chart per currency, so a currency with small sums is never dwarfed by another.
    const currencies = [...new Set(campaigns.rows.map((row) => row.currency).filter(Boolean))].sort();
    const revenue = section(main, 'Top campaigns by revenue', { note: 'Middle of each revenue range, the ten largest per currency; never added across currencies.' });
    if (!currencies.length) chart(revenue, 'chart-revenue', 'Revenue by campaign', { type: 'bar', data: { labels: [], datasets: [] } });
    for (const code of currencies) {
      const rows = top(campaigns.rows.filter((row) => row.currency === code && Number(row.revenue_mid) > 0), 'revenue_mid', 10);
      chart(revenue, `chart-revenue-${code}`, `Revenue by campaign in ${code}`, {
        type: 'bar',
        data: { labels: rows.map(campaignLabel), datasets: [{ label: `Revenue (${code})`, data: rows.map((row) => Number(row.revenue_mid)) }] },
        options: { indexAxis: 'y', scales: { x: { beginAtZero: true }, y: { ticks: { autoSkip: false } } },
          plugins: { tooltip: { callbacks: { label: (item) => format.money(item.raw, code) } } } },
      });
    }

    const trend = section(main, 'Installs over time', { wide: true, note: `Installs per day for the five campaigns with the most installs; days by ${basisNames[basis]}. Faded points and dashed lines: days that still receive first-window postbacks, whose figures will grow.` });
    const leading = new Set(top(campaigns.rows, 'installs', 5).map(campaignLabel));
    chart(trend, 'chart-campaign-trend', 'Installs per day for the top campaigns', {
      type: 'line',
      data: series(overTime.rows.filter((row) => leading.has(campaignLabel(row))).map((row) => ({ ...row, label: campaignLabel(row) })), 'day', 'label', 'installs'),
      young: maturity, options: { scales: { y: { beginAtZero: true } } },
    });

    const tree = section(main, 'Campaigns', { wide: true, note: 'Names come from the name registry, then the app\'s schema, then Apple Ads placements, else the digits. Revenue is a low–high range in each row\'s currency. Every column sorts.' });
    picker(tree, 'Down to: ', 'level', { campaign: 'campaign', ad_group: 'ad group', creative: 'creative' }, level);
    table(tree, { id: 'campaigns', caption: `Counted conversions by ${level.replace('_', ' ')}`, rows: sources.rows, report: sources, sort: ['installs', 'desc'], columns: [
      ...levels[level].filter((key) => key !== 'ad_network').map((key) => ({ key, label: labels[key], title: key === 'ad_network_name' ? 'ad_network' : null })),
      { key: 'currency', label: 'Currency' },
      { key: 'installs', label: 'Installs', kind: 'count' }, { key: 're_engagements', label: 'Re-engagements', kind: 'count' },
      { key: 'postbacks', label: 'Postbacks', kind: 'count' }, { key: 'events', label: 'Events', kind: 'count' },
      { key: 'revenue_min', label: 'Revenue (low)', kind: 'money' }, { key: 'revenue_max', label: 'Revenue (high)', kind: 'money' },
    ] });

    const spent = section(main, 'Spend and return by campaign', { wide: true,
      note: `Installs, revenue of installs, spend, eCPI and ROAS as Performance counts them (GET /v1/performance), days by ${basisNames[basis]}. The campaign is the network's campaign id where a dated mapping names it, else the digits; eCPI and ROAS need spend imported in the revenue's currency (docs/spend.md).` });
    table(spent, { id: 'campaign-money', caption: 'Spend and return by campaign', rows: money.rows, report: money, sort: ['installs', 'desc'], columns: [
      { key: 'app_name', label: 'App' }, { key: 'ad_network_name', label: 'Ad network', title: 'ad_network' }, { key: 'campaign', label: 'Campaign' },
      { key: 'currency', label: 'Currency' }, { key: 'installs', label: 'Installs', kind: 'count' },
      { key: 'revenue_mid', label: 'Revenue (middle)', kind: 'money' }, { key: 'spend', label: 'Spend', kind: 'money' },
      { key: 'ecpi', label: 'eCPI', kind: 'money' }, { key: 'roas_mid', label: 'ROAS (middle)', kind: 'share' },
    ] });

    const byWindow = section(main, 'Windows and conversion values', { note: 'Fine values, coarse values only, or none (Apple withholds values below its crowd-anonymity thresholds).' });
    const windowData = series(windows.rows, 'window', 'value_kind', 'postbacks', (kind) => valueKinds[kind] || kind);
    for (const dataset of windowData.datasets) dataset.backgroundColor = dataset.borderColor = valueColours[dataset.label];
    chart(byWindow, 'chart-windows', 'Postbacks by window and kind of conversion value', {
      type: 'bar', data: windowData,
      options: { scales: { x: { stacked: true, title: { display: true, text: 'Window' } }, y: { stacked: true, beginAtZero: true } } },
    });
    table(byWindow, { id: 'windows', caption: 'Postbacks by window, kind of value and currency', rows: windows.rows, report: windows, columns: [
      { key: 'window', label: 'Window', kind: 'count' }, { key: 'value_kind', label: 'Value' }, { key: 'currency', label: 'Currency' },
      { key: 'postbacks', label: 'Postbacks', kind: 'count' }, { key: 'events', label: 'Events', kind: 'count' },
      { key: 'revenue_min', label: 'Revenue (low)', kind: 'money' }, { key: 'revenue_max', label: 'Revenue (high)', kind: 'money' },
    ] });
  },
};
