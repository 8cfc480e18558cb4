// Overview: the headline numbers against the previous period (installs as docs/metrics.md counts them, revenue of
// installs per currency, eCPI and ROAS where spend is imported), what became of every body received per day, counted
// conversions by protocol, installs against re-engagements, and the crowd-anonymity tier mix. One day basis for the
// page (estimated install day by default, as Performance counts; or arrival day), named on it; only the bodies
// received are by arrival day whatever the basis, as a rejected body has no install day.
import { api, apiAll, basisNames, basisPicker, chart, format, picker, previousFilters, readBasis, reportFilters, section, series, table, tiles, total } from './core.js';
import { colours } from './logic.js';

const statusNames = {
  counted: 'Counted', development: 'Development', not_counted: 'Not counted', unverifiable: 'Unverifiable',
  duplicate: 'Duplicate', replay: 'Replay', unverified_copy: 'Unverified copy', rejected: 'Rejected',
};

/** The performance report's filters (it takes fewer than the other reports), on the page's basis. */
function moneyFilters(filters, basis, currency) {
  const chosen = Object.fromEntries(['app', 'ad_network', 'from', 'to', 'tz'].filter((name) => filters[name]).map((name) => [name, filters[name]]));
  return { ...chosen, basis, ...(currency ? { currency } : {}) };
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
    const basis = readBasis(query);
    const filters = { ...reportFilters(query), basis };
    const intakeFilters = reportFilters(query, { uncounted: false });
    const previous = previousFilters(query, filters);
    const previousIntake = previousFilters(query, intakeFilters);
    const currency = query.get('currency') || '';
    const [intake, rejected, byDay, byTier, acquisition, money, days, before, acquisitionBefore, moneyBefore, intakeBefore, tiersBefore] = await Promise.all([
      api('intake', { ...intakeFilters, by: 'day,status' }),
      api('intake', { ...intakeFilters, status: 'rejected', by: 'reason' }),
      api('reports', { ...filters, by: 'day,protocol' }),
      api('reports', { ...filters, by: 'tier' }),
      // Revenue of installs, as performance counts it: install postbacks only, re-engagements' revenue apart.
      api('reports', { ...filters, type: 'install' }),
      // The performance report without dimensions is one row per currency, so one page.
      apiAll('performance', moneyFilters(filters, basis, currency), 1),
      apiAll('performance', { ...moneyFilters(filters, basis, ''), by: 'day' }, 20),
      previous ? api('reports', { ...previous, by: 'protocol' }) : null,
      previous ? api('reports', { ...previous, type: 'install' }) : null,
      previous ? apiAll('performance', moneyFilters(previous, basis, currency), 1) : null,
      previousIntake ? api('intake', { ...previousIntake, by: 'status' }) : null,
      previous ? api('reports', { ...previous, by: 'tier' }) : null,
    ]);
    const maturity = new Map(days.rows.map((row) => [row.day, row.window_0_maturity]));
    const youngDays = [...maturity.values()].filter((state) => state !== 'closed').length;
    const postbacks = total(byDay.rows, 'postbacks');
    const then = (key) => (before ? total(before.rows, key) : undefined);
    const duplicates = (rows) => total(rows.filter((row) => row.status === 'duplicate'), 'postbacks');
    const head = section(main, 'Totals', { wide: true,
      note: `Days by ${basisNames[basis]}, in ${byDay.time_zone}${previous ? '; each figure against the same number of days just before' : '; pick dates to compare each figure with the period before'}. Installs: one per winning first-window install postback that counts (docs/metrics.md); revenue, eCPI and ROAS of installs, as Performance counts them.${youngDays ? (basis === 'install' ? ` ${youngDays} of these days still receive first-window postbacks: their figures will grow.` : ' Today is still arriving.') : ''}` });
    basisPicker(head, basis);
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
    const revenueRows = currency ? money.rows : acquisition.rows;
    const revenueBefore = currency ? moneyBefore?.rows : acquisitionBefore?.rows;
    const revenue = byCurrency(revenueRows, 'revenue_mid'), low = byCurrency(revenueRows, 'revenue_min'), high = byCurrency(revenueRows, 'revenue_max');
    const earlierRevenue = revenueBefore ? byCurrency(revenueBefore, 'revenue_mid') : null;
    for (const [code, value] of revenue) {
      items.push({ id: `revenue_${code}`, label: `Revenue of installs (${code}, middle)`, value, shown: format.money(value, code),
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

    const outcomes = section(main, 'Postbacks per day by outcome', { note: 'Every body received, by the day it arrived whatever the basis (a rejected body has no install day): stored postbacks by status, copies and rejected bodies by disposition.' });
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

    const greyNote = basis === 'install'
      ? `Days by ${basisNames[basis]}; faded days still receive first-window postbacks, so their figures will grow (docs/metrics.md, Maturity).`
      : `Days by ${basisNames[basis]}; today is faded: postbacks are still arriving.`;
    const protocols = section(main, 'Counted conversions per day by protocol', { note: `Days by ${basisNames[basis]}.` });
    chart(protocols, 'chart-protocols', 'Counted conversions per day by protocol', {
      type: 'line', data: series(byDay.rows, 'day', 'protocol', 'postbacks', (name) => (name === 'aak' ? 'AdAttributionKit' : 'SKAdNetwork')),
      options: { scales: { y: { beginAtZero: true } } },
    });
    table(protocols, { id: 'protocols', caption: 'Counted conversions by day, protocol and currency', rows: byDay.rows, report: byDay, columns: [
      { key: 'day', label: 'Day' }, { key: 'protocol', label: 'Protocol' }, { key: 'currency', label: 'Currency' },
      { key: 'postbacks', label: 'Postbacks', kind: 'count' }, { key: 'installs', label: 'Installs', kind: 'count' },
      { key: 're_engagements', label: 'Re-engagements', kind: 'count' },
    ] });

    const kinds = section(main, 'Installs and re-engagements per day', { note: greyNote });
    const shownDays = [...new Set(byDay.rows.map((row) => row.day))].sort();
    const kindsData = { labels: shownDays, datasets: ['installs', 're_engagements'].map((key, index) => ({
      label: key === 'installs' ? 'Installs' : 'Re-engagements', backgroundColor: colours(2)[index], borderColor: colours(2)[index],
      data: shownDays.map((day) => total(byDay.rows.filter((row) => row.day === day), key)),
    })) };
    chart(kinds, 'chart-installs', 'Installs and re-engagements per day', {
      type: 'bar', data: kindsData, young: maturity,
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
