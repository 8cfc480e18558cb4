// Overview: the headline numbers against the previous period (installs as docs/metrics.md counts them, revenue per
// currency, eCPI and ROAS where spend is imported), what became of every postback per day, counted conversions by
// protocol, installs against re-engagements, and the crowd-anonymity tier mix.
import { api, apiAll, chart, format, picker, previousFilters, reportFilters, section, series, table, tiles, total } from './core.js';
import { colours } from './logic.js';

const statusNames = {
  counted: 'Counted', development: 'Development', not_counted: 'Not counted', unverifiable: 'Unverifiable',
  duplicate: 'Duplicate', replay: 'Replay', unverified_copy: 'Unverified copy', rejected: 'Rejected',
};

/**
 * The performance report's filters (it takes fewer than the other reports), by arrival day as every other figure on
 * this page: eCPI and ROAS then cover the same days as installs and revenue.
 */
function moneyFilters(filters, currency) {
  const chosen = Object.fromEntries(['app', 'ad_network', 'from', 'to', 'tz'].filter((name) => filters[name]).map((name) => [name, filters[name]]));
  return { ...chosen, basis: 'arrival', ...(currency ? { currency } : {}) };
}

/** The share of `rows` (by tier) without a conversion value, and how many postbacks that is out of. */
function withoutValue(rows) {
  const postbacks = total(rows, 'postbacks');
  return postbacks ? rows.reduce((sum, row) => sum + Number(row.share_without_value) * Number(row.postbacks), 0) / postbacks : '';
}

/** One figure per currency of `rows` (each row's `currency`): the sum of `key`. */
function byCurrency(rows, key) {
  const sums = new Map();
  for (const row of rows) if (row.currency) sums.set(row.currency, (sums.get(row.currency) || 0) + Number(row[key] || 0));
  return sums;
}

export default {
  title: 'Overview',
  async render(main, query) {
    const filters = reportFilters(query);
    const intakeFilters = reportFilters(query, { uncounted: false });
    const previous = previousFilters(query, filters);
    const previousIntake = previousFilters(query, intakeFilters);
    const currency = query.get('currency') || '';
    const [intake, rejected, byDay, byTier, money, before, moneyBefore, intakeBefore, tiersBefore] = await Promise.all([
      api('intake', { ...intakeFilters, by: 'day,status' }),
      api('intake', { ...intakeFilters, status: 'rejected', by: 'reason' }),
      api('reports', { ...filters, by: 'day,protocol' }),
      api('reports', { ...filters, by: 'tier' }),
      // The performance report without dimensions is one row, so one page.
      apiAll('performance', moneyFilters(filters, currency), 1),
      previous ? api('reports', { ...previous, by: 'protocol' }) : null,
      previous ? apiAll('performance', moneyFilters(previous, currency), 1) : null,
      previousIntake ? api('intake', { ...previousIntake, by: 'status' }) : null,
      previous ? api('reports', { ...previous, by: 'tier' }) : null,
    ]);
    const postbacks = total(byDay.rows, 'postbacks');
    const then = (key) => (before ? total(before.rows, key) : undefined);
    const duplicates = (rows) => total(rows.filter((row) => row.status === 'duplicate'), 'postbacks');
    const head = section(main, 'Totals', { wide: true,
      note: `Days in ${byDay.time_zone}${previous ? '; each figure against the same number of days just before' : '; pick dates to compare each figure with the period before'}. Installs: one per winning first-window install postback that counts (docs/metrics.md).` });
    // Money: revenue per currency from the reports (never added across currencies); eCPI and ROAS where spend is
    // imported and one currency holds revenue and spend (the row's own, or the one picked with exchange rates).
    const currencies = [...new Set(money.rows.flatMap((row) => (row.currencies || '').split(',')).concat(byDay.rows.map((row) => row.currency)).filter(Boolean))].sort();
    if (currencies.length > 1 || currency) {
      picker(head, 'Money in: ', 'currency', Object.fromEntries([['', 'each currency'], ...currencies.concat(currency && !currencies.includes(currency) ? [currency] : []).map((code) => [code, code])]), currency);
    }
    const items = [
      { id: 'installs', label: 'Installs', value: total(byDay.rows, 'installs'), shown: format.count(total(byDay.rows, 'installs')), previous: then('installs') },
      { id: 're_engagements', label: 'Re-engagements', value: total(byDay.rows, 're_engagements'), shown: format.count(total(byDay.rows, 're_engagements')), previous: then('re_engagements') },
    ];
    const revenueRows = currency ? money.rows : byDay.rows;
    const revenueBefore = currency ? moneyBefore?.rows : before?.rows;
    const revenue = byCurrency(revenueRows, 'revenue_mid'), low = byCurrency(revenueRows, 'revenue_min'), high = byCurrency(revenueRows, 'revenue_max');
    const earlierRevenue = revenueBefore ? byCurrency(revenueBefore, 'revenue_mid') : null;
    for (const [code, value] of revenue) {
      items.push({ id: `revenue_${code}`, label: `Revenue (${code}, middle)`, value, shown: format.money(value, code),
        detail: `${format.money(low.get(code), code)} to ${format.money(high.get(code), code)}`, previous: earlierRevenue ? earlierRevenue.get(code) ?? 0 : undefined });
    }
    for (const row of money.rows.filter((candidate) => candidate.currency && candidate.spend !== null)) {
      const earlier = moneyBefore?.rows.find((candidate) => candidate.currency === row.currency);
      items.push({ id: `ecpi_${row.currency}`, label: `eCPI (${row.currency})`, value: row.ecpi ?? '', shown: format.money(row.ecpi, row.currency),
        detail: `spend ${format.money(row.spend, row.currency)}`, previous: moneyBefore ? earlier?.ecpi ?? null : undefined, lowerIsBetter: true });
      items.push({ id: `roas_${row.currency}`, label: `ROAS (${row.currency}, middle)`, value: row.roas_mid ?? '', shown: format.share(row.roas_mid),
        detail: `${format.share(row.roas_min)} to ${format.share(row.roas_max)}`, previous: moneyBefore ? earlier?.roas_mid ?? null : undefined });
    }
    const mixed = money.rows.find((row) => !row.currency && row.spend === null && (row.currencies || '').includes(','));
    if (mixed && !currency) items.push({ id: 'roas', label: 'ROAS', value: '', shown: '–', detail: `spend and revenue in ${mixed.currencies.replace(',', ' and ')}: pick one under Money in` });
    items.push(
      { id: 'counted', label: 'Counted postbacks', value: postbacks, shown: format.count(postbacks), previous: then('postbacks') },
      { id: 'duplicates', label: 'Duplicates', value: duplicates(intake.rows), shown: format.count(duplicates(intake.rows)),
        previous: intakeBefore ? duplicates(intakeBefore.rows) : undefined, lowerIsBetter: true },
      { id: 'share_without_value', label: 'Without a conversion value', value: withoutValue(byTier.rows),
        shown: postbacks ? format.share(withoutValue(byTier.rows)) : '–', previous: tiersBefore ? withoutValue(tiersBefore.rows) || null : undefined, lowerIsBetter: true },
    );
    tiles(head, items);

    const outcomes = section(main, 'Postbacks per day by outcome', { note: 'Every body received: stored postbacks by status, copies and rejected bodies by disposition.' });
    chart(outcomes, 'chart-outcomes', 'Postbacks per day by outcome', {
      type: 'bar', data: series(intake.rows, 'day', 'status', 'postbacks', (status) => statusNames[status] || status),
      options: { scales: { x: { stacked: true }, y: { stacked: true, beginAtZero: true } } },
    });
    table(outcomes, { id: 'outcomes', caption: 'Postbacks by day and outcome', rows: intake.rows, report: intake, columns: [
      { key: 'day', label: 'Day' }, { key: 'status', label: 'Outcome' }, { key: 'postbacks', label: 'Postbacks', kind: 'count' },
    ] });

    const reasons = section(main, 'Rejected, by reason');
    table(reasons, { id: 'rejected', caption: 'Rejected bodies by reason', rows: rejected.rows, report: rejected, empty: 'Nothing rejected in these dates: every body was a postback that verified or was kept to check later.', columns: [
      { key: 'reason', label: 'Reason' }, { key: 'postbacks', label: 'Bodies', kind: 'count' },
    ] });

    const protocols = section(main, 'Counted conversions per day by protocol');
    chart(protocols, 'chart-protocols', 'Counted conversions per day by protocol', {
      type: 'line', data: series(byDay.rows, 'day', 'protocol', 'postbacks', (name) => (name === 'aak' ? 'AdAttributionKit' : 'SKAdNetwork')),
      options: { scales: { y: { beginAtZero: true } } },
    });
    table(protocols, { id: 'protocols', caption: 'Counted conversions by day, protocol and currency', rows: byDay.rows, report: byDay, columns: [
      { key: 'day', label: 'Day' }, { key: 'protocol', label: 'Protocol' }, { key: 'currency', label: 'Currency' },
      { key: 'postbacks', label: 'Postbacks', kind: 'count' }, { key: 'installs', label: 'Installs', kind: 'count' },
      { key: 're_engagements', label: 'Re-engagements', kind: 'count' },
    ] });

    const kinds = section(main, 'Installs and re-engagements per day');
    const days = [...new Set(byDay.rows.map((row) => row.day))].sort();
    chart(kinds, 'chart-installs', 'Installs and re-engagements per day', {
      type: 'bar',
      data: { labels: days, datasets: ['installs', 're_engagements'].map((key) => ({
        label: key === 'installs' ? 'Installs' : 'Re-engagements',
        data: days.map((day) => total(byDay.rows.filter((row) => row.day === day), key)),
      })) },
      options: { scales: { x: { stacked: true }, y: { stacked: true, beginAtZero: true } } },
    });

    const tiers = section(main, 'Crowd-anonymity tiers', { note: 'The lowest tier each postback allows; the share without a conversion value per tier.' });
    const tierValues = [...new Set(byTier.rows.map((row) => row.tier))].sort((a, b) => a - b);
    chart(tiers, 'chart-tiers', 'Postbacks by crowd-anonymity tier', {
      type: 'doughnut',
      data: { labels: tierValues.map((tier) => `Tier ${tier}`), datasets: [{
        label: 'Postbacks', data: tierValues.map((tier) => total(byTier.rows.filter((row) => row.tier === tier), 'postbacks')),
        backgroundColor: colours(tierValues.length),
      }] },
    });
    table(tiers, { id: 'tiers', caption: 'Postbacks by tier and currency', rows: byTier.rows, report: byTier, columns: [
      { key: 'tier', label: 'Tier', kind: 'count' }, { key: 'currency', label: 'Currency' }, { key: 'postbacks', label: 'Postbacks', kind: 'count' },
      { key: 'share_without_value', label: 'Without a value', kind: 'share' },
    ] });
  },
};
