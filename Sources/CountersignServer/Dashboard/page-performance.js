// Performance: what networks claim against what Apple signed, and what installs cost and returned (GET /v1/performance):
// installs and claimed installs per network, the postbacks behind the gap, spend, eCPI, CPI and ROAS ranges per
// campaign, and the cohort curves: what installs returned by days 2, 7 and 35. Every figure is the API's; nothing is
// added across currencies.
import { api, apiAll, basisNames, basisPicker, chart, element, format, picker, reportFilters, section, stateURL, table, tiles, total } from './core.js';

/** The filters /v1/performance takes, from the page's state: the shared ones it knows, and its own. */
function performanceFilters(query) {
  const { app, ad_network: adNetwork, from, to, tz } = reportFilters(query);
  const filters = Object.fromEntries(Object.entries({ app, ad_network: adNetwork, from, to, tz }).filter(([, value]) => value));
  for (const name of ['currency', 'basis']) if (query.get(name)) filters[name] = query.get(name);
  return filters;
}

/** Pages of a report read at most (10,000 rows each): every group the server's default cap allows (50,000). */
const maxPages = 5;

const money = (key, label) => ({ key, label, kind: 'money' });
const ratio = (key, label) => ({ key, label, kind: 'share' });

export default {
  title: 'Performance',
  filters: ['range', 'from', 'to', 'tz', 'app', 'ad_network'],
  async render(main, query) {
    const filters = performanceFilters(query);
    // Cohorts are install weeks whatever the page's basis.
    const { basis, ...cohortFilters } = filters;
    const [networks, campaigns, curves, imports] = await Promise.all([
      apiAll('performance', { ...filters, by: 'ad_network,ad_network_name' }, maxPages),
      apiAll('performance', { ...filters, by: 'app_name,ad_network,ad_network_name,campaign' }, maxPages),
      // The curves are the page's last part: a report too large for them leaves the rest shown.
      api('cohorts', { ...cohortFilters, by: 'app_name,ad_network,ad_network_name' }).catch((error) => ({ rows: [], error: error.message })),
      api('spend/imports', { limit: 1 }).catch(() => ({ rows: [] })),
    ]);

    const head = section(main, 'Claimed against verified', { wide: true,
      note: `Installs Apple signed (one per winning first-window install postback that counts) against what networks claim in their imported reports. Unverifiable and failed verification are under the network an unverified body claims: anyone can send such bodies, they never count, and they do not show what a network did; copies are counted only where Apple's signature proves the network. Days by ${basisNames[filters.basis || 'install']} (${networks.time_zone}). docs/metrics.md defines every column.` });
    basisPicker(head, filters.basis || 'install');
    const currencies = [...new Set(campaigns.rows.map((row) => row.currency).filter(Boolean))].sort();
    picker(head, 'Money in: ', 'currency', Object.fromEntries([['', 'each row\'s currency'], ...currencies.map((code) => [code, code])]), filters.currency || '');
    if ([networks, campaigns].some((report) => report.next_after)) {
      head.append(element('p', { class: 'note', text: `Only the first ${format.count(maxPages * 10000)} rows of a report are shown: pick fewer days, or filter by app or ad network.` }));
    }
    if (!imports.rows.length) head.append(element('p', { class: 'note', text: 'No spend imported yet: countersign spend import FILE (docs/spend.md) fills in claims, spend and the return on it.' }));
    const installs = total(networks.rows, 'installs');
    const claimed = networks.rows.some((row) => row.claimed_installs !== null) ? total(networks.rows, 'claimed_installs') : null;
    // Apple sends the first postback 24 to 96 hours after an install: days still inside that delay are short of
    // verified installs, not of honest networks (finding 12).
    const young = networks.rows.some((row) => row.window_0_maturity && row.window_0_maturity !== 'closed');
    const growing = young ? 'will grow: some days still receive first-window postbacks (24-96 h after install)' : null;
    tiles(head, [
      { id: 'installs', label: 'Verified installs', value: installs, shown: format.count(installs), detail: growing },
      { id: 'claimed_installs', label: 'Claimed installs', value: claimed ?? '', shown: format.count(claimed) },
      { id: 'install_ratio', label: 'Claimed installs Apple signed', value: claimed ? installs / claimed : '', shown: claimed ? format.share(installs / claimed) : '–', detail: claimed ? growing : null },
      { id: 'forged', label: 'Failed verification (network as claimed)', value: total(networks.rows, 'forged'), shown: format.count(total(networks.rows, 'forged')) },
    ]);
    chart(head, 'chart-claims', 'Claimed and verified installs by ad network', {
      type: 'bar',
      data: { labels: networks.rows.map((row) => format.text(row.ad_network_name)), datasets: [
        { label: 'Verified installs', data: networks.rows.map((row) => Number(row.installs || 0)) },
        { label: 'Claimed installs', data: networks.rows.map((row) => Number(row.claimed_installs || 0)) },
      ] },
      options: { scales: { y: { beginAtZero: true } } },
    });
    table(head, { id: 'gap', caption: 'The gap by ad network, and the postbacks behind it', rows: networks.rows, report: networks, columns: [
      { key: 'ad_network_name', label: 'Ad network' }, { key: 'installs', label: 'Verified installs', kind: 'count' },
      { key: 'claimed_installs', label: 'Claimed installs', kind: 'count' }, { key: 'install_gap', label: 'Gap', kind: 'count' },
      ratio('install_ratio', 'Signed share'), { key: 're_engagements', label: 'Re-engagements', kind: 'count' },
      { key: 'claimed_re_engagements', label: 'Claimed re-engagements', kind: 'count' },
      { key: 'not_counted_unverifiable', label: 'Unverifiable (network as claimed)', kind: 'count' }, { key: 'not_counted_development', label: 'Development', kind: 'count' },
      { key: 'not_counted_policy', label: 'Not counted by the rules', kind: 'count' }, { key: 'copies', label: 'Copies', kind: 'count' },
      { key: 'forged', label: 'Failed verification (network as claimed)', kind: 'count' },
    ] });

    // Drill-down: the postbacks behind one network's verified installs, each linked to its lookup.
    picker(head, 'Postbacks of: ', 'postbacks_of', Object.fromEntries([['', 'none'], ...networks.rows.map((row) => [row.ad_network, format.text(row.ad_network_name)])]), query.get('postbacks_of') || '');
    const network = query.get('postbacks_of');
    if (network) {
      const list = await api('conversions', { ...Object.fromEntries(['app', 'from', 'to', 'tz'].filter((name) => filters[name]).map((name) => [name, filters[name]])),
        ad_network: network, window: '0', type: 'install', did_win: 'true', limit: 200 });
      const drill = section(main, `Verified first-window postbacks of ${network}`, { wide: true,
        note: 'The winning first-window install postbacks that count, as verified installs does, by the day they arrived; the first 200, oldest first: each identifier opens its lookup (every copy received, the verification report). To check a network\'s own list of identifiers: countersign reconcile (docs/cli.md).' });
      const rows = list.rows.map((row) => ({ ...row, identifier: row.postback_identifier }));
      const node = table(drill, { id: 'drill', caption: `Postbacks of ${network}`, rows, report: list, columns: [
        { key: 'received_at', label: 'Received' }, { key: 'identifier', label: 'Postback identifier' }, { key: 'protocol', label: 'Protocol' },
        { key: 'campaign', label: 'Campaign' }, { key: 'conversion_class', label: 'Class' }, { key: 'did_win', label: 'Won', kind: 'count' },
        { key: 'countable', label: 'Counts', kind: 'count' }, { key: 'duplicates', label: 'Duplicates', kind: 'count' },
      ] });
      for (const cell of node.querySelectorAll('[data-column="identifier"]')) {
        const link = element('a', { href: stateURL({ page: 'lookup', id: cell.dataset.value, postbacks_of: null }), text: cell.textContent });
        cell.replaceChildren(link);
      }
    }

    const spend = section(main, 'Spend and return by app and campaign', { wide: true,
      note: 'Revenue is the range the schema gives the conversion values, every window (days 0-35); ROAS is revenue over spend: the middle here, low and high in the CSV. Modeled revenue scales the middle by installs over installs with a value. The CSV adds privacy_hint: consolidate where most installs stay under the privacy thresholds of Apple (tiers 0 and 1). Empty: no spend imported, or amounts in several currencies (see note).' });
    table(spend, { id: 'roas', caption: 'Spend, cost per install and return on ad spend by app, ad network and campaign', rows: campaigns.rows, report: campaigns, columns: [
      { key: 'app_name', label: 'App' }, { key: 'ad_network_name', label: 'Ad network' }, { key: 'campaign', label: 'Campaign' }, { key: 'currency', label: 'Currency' },
      { key: 'installs', label: 'Installs', kind: 'count' }, { key: 'claimed_installs', label: 'Claimed', kind: 'count' },
      money('spend', 'Spend'), money('ecpi', 'eCPI'), money('cpi', 'CPI'), money('revenue_mid', 'Revenue (middle)'),
      ratio('roas_mid', 'ROAS (middle)'),
      money('modeled_revenue_mid', 'Modeled revenue'), ratio('null_rate', 'Without a value'), { key: 'note', label: 'Note' },
    ] });

    const cohort = section(main, 'Return by days since install', { wide: true,
      note: 'Cohort curves (GET /v1/cohorts): ROAS (middle) of acquisition revenue by day 2, 7 and 35 after install, per app and ad network (the revenue of an app is in its own currency, so each line has one, or the one money is shown in). Each point adds up only the install weeks of these dates whose window has closed (window 0 closes 3.5 days after a week ends, window 1 10.5 days, window 2 38.5 days), so recent installs never pull a curve down; the table says how many installs stand behind each point.' });
    if (curves.error) cohort.append(element('p', { class: 'note', text: `The cohort curves could not be read: ${curves.error}` }));
    const points = [['d2', 'Day 2'], ['d7', 'Day 7'], ['d35', 'Day 35']];
    chart(cohort, 'chart-roas', 'Return on ad spend (middle) by days since install, app and ad network', {
      type: 'line',
      // A line for each app and network with a return on some day; the table lists the others.
      data: { labels: points.map(([, label]) => label), datasets: curves.rows.filter((row) => points.some(([point]) => row[`roas_${point}`] !== null)).map((row) => ({
        label: `${format.text(row.app_name)} · ${format.text(row.ad_network_name)}`,
        data: points.map(([point]) => (row[`roas_${point}`] === null ? null : Number(row[`roas_${point}`]))),
      })) },
      options: { spanGaps: false, scales: { y: { beginAtZero: true, ticks: { callback: (value) => format.share(value) } } },
        plugins: { tooltip: { callbacks: { label: (item) => `${item.dataset.label}: ${format.share(item.raw)}` } } } },
    });
    table(cohort, { id: 'cohorts', caption: 'Revenue per install and return by days since install, over the install weeks whose window has closed', rows: curves.rows, report: curves, columns: [
      { key: 'app_name', label: 'App' }, { key: 'ad_network_name', label: 'Ad network' }, { key: 'currency', label: 'Currency' },
      { key: 'installs', label: 'Installs', kind: 'count' }, { key: 'cohort_installs_d2', label: 'Installs, day 2', kind: 'count' }, money('revenue_per_install_d2', 'Revenue per install, day 2'), ratio('roas_d2', 'ROAS, day 2'),
      { key: 'cohort_installs_d7', label: 'Installs, day 7', kind: 'count' }, money('revenue_per_install_d7', 'Revenue per install, day 7'), ratio('roas_d7', 'ROAS, day 7'),
      { key: 'cohort_installs_d35', label: 'Installs, day 35', kind: 'count' }, money('revenue_per_install_d35', 'Revenue per install, day 35'), ratio('roas_d35', 'ROAS, day 35'),
      { key: 'note', label: 'Note' },
    ] });
  },
};
