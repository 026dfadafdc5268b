/* Cost and energy per token (docs/MODEL.md section 10), worked by hand. */
#include <math.h>
#include <string.h>

#include "check.h"
#include "hbdlab/hbdlab.h"

/* A cluster of B200-like numbers chosen so the arithmetic stays round:
 * capex per GPU 33,830 + 5,000 + 5,000 = 43,830 USD over 5 years of 8,766 h
 * = 43,830 h -> exactly 1 USD per GPU-hour. 1,000 W at load, 250 W waiting,
 * PUE 1.5, 0.10 USD/kWh. */
static hl_cluster cluster(void)
{
    hl_gpu g;
    hl_err e;
    if (hl_gpu_preset("b200", &g, &e) != HL_OK)
        fail_msg("%s", e.msg);
    g.capex_usd = 33830;
    g.power_w = 1000;
    g.idle_w = 250;
    hl_cluster c;
    if (hl_cluster_init(&c, &g, 8, 8, &e) != HL_OK)
        fail_msg("%s", e.msg);
    c.scaleup_usd = 5000;
    c.scaleout_usd = 5000;
    c.amort_years = 5;
    c.pue = 1.5;
    c.usd_per_kwh = 0.10;
    return c;
}

/* 8 GPUs, batch 4, input 1,000, output 100.
 * Prefill 2 s of which 1.5 s kernels; decode 10 s of which 6 s kernels.
 * Energy (J) = 8 GPUs * 1.5 PUE * (250 W * time + 750 W * busy):
 *   prefill 12 * (500 + 1,125) = 19,500; decode 12 * (2,500 + 4,500) = 84,000; total 103,500.
 * Average power 103,500 J / 12 s = 8,625 W; peak 8 * 1,000 * 1.5 = 12,000 W.
 * Capex 8 GPUs * 1 USD/h = 8/3,600 USD/s; electricity 0.10 / 3.6e6 USD/J.
 *   prefill 16/3,600 + 1,950/3.6e6   = 0.004444444 + 0.000541667 = 0.004986111 USD
 *   decode  80/3,600 + 8,400/3.6e6   = 0.022222222 + 0.002333333 = 0.024555556 USD
 * Tokens: prompt 4 * 1,000 = 4,000; decode 4 * 99 = 396; generated 4 + 396 = 400.
 *   USD/Mtok in  = 0.004986111 / 4,000 * 1e6 = 1.24652778
 *   USD/Mtok out = 0.024555556 / 396 * 1e6   = 62.0089787
 *   USD/Mtok     = 0.029541667 / 400 * 1e6   = 73.8541667
 *   J/token = 103,500 / 400 = 258.75; in 19,500 / 4,000 = 4.875; out 84,000 / 396 = 212.121212 */
static void test_hand_worked(void **state)
{
    (void)state;
    hl_cluster c = cluster();
    hl_cost_phase pre = {2.0, 1.5, 4000}, dec = {10.0, 6.0, 396};
    hl_cost k;
    hl_cost_compute(&c, 8, 4, &pre, &dec, &k);
    assert_rel(k.usd_per_gpu_hour, 1.0, 1e-12, "USD per GPU-hour");
    assert_rel(k.prefill_j, 19500, 1e-12, "prefill J");
    assert_rel(k.decode_j, 84000, 1e-12, "decode J");
    assert_rel(k.power_w, 8625, 1e-12, "average W");
    assert_rel(k.peak_power_w, 12000, 1e-12, "peak W");
    assert_rel(k.prefill_usd, 0.004986111111, 1e-9, "prefill USD");
    assert_rel(k.decode_usd, 0.024555555556, 1e-9, "decode USD");
    assert_rel(k.usd_per_mtok_in, 1.2465277778, 1e-9, "USD/Mtok in");
    assert_rel(k.usd_per_mtok_out, 62.008978676, 1e-9, "USD/Mtok out");
    assert_rel(k.usd_per_mtok, 73.854166667, 1e-9, "USD/Mtok");
    assert_rel(k.joules_per_token, 258.75, 1e-12, "J/token");
    assert_rel(k.joules_per_token_in, 4.875, 1e-12, "J/token in");
    assert_rel(k.joules_per_token_out, 212.12121212, 1e-9, "J/token out");
}

/* power_w 0 falls back to tdp_w (B200: 1,000 W); idle above load is clamped to
 * load; one output token means no decode: per-decode-token figures are 0. */
static void test_fallbacks(void **state)
{
    (void)state;
    hl_cluster c = cluster();
    c.gpu.power_w = 0;
    c.gpu.idle_w = 5000;
    hl_cost_phase pre = {2.0, 1.0, 4000}, dec = {0, 0, 0};
    hl_cost k;
    hl_cost_compute(&c, 8, 4, &pre, &dec, &k);
    /* 8 * 1.5 * 1,000 W * 2 s = 24,000 J whatever the busy time */
    assert_rel(k.prefill_j, 24000, 1e-12, "tdp fallback, idle clamped");
    assert_rel(k.usd_per_mtok_out, 0, 0, "no decode");
    assert_rel(k.joules_per_token_out, 0, 0, "no decode J");
    assert_rel(k.joules_per_token, 24000.0 / 4, 1e-12, "J per generated token (prefill's first tokens)");
}

/* A whole simulation carries its cost: prompt tokens priced from prefill only,
 * so doubling the electricity price raises the cost by exactly the energy term. */
static void test_simulation_carries_cost(void **state)
{
    (void)state;
    hl_err e;
    hl_model m;
    assert_ok(hl_model_preset("llama-3.1-8b", &m, &e), &e);
    hl_job j;
    hl_cluster c = cluster();
    hl_job_init(&j, &m, &c);
    j.tp = 8;
    hl_result r1, r2;
    assert_ok(hl_sim_run(&j, &r1, &e), &e);
    j.cluster.usd_per_kwh = 0.20;
    assert_ok(hl_sim_run(&j, &r2, &e), &e);
    double tokens = j.batch * j.input;
    double energy_usd = r1.cost.prefill_j * 0.10 / 3.6e6;
    assert_rel(r1.cost.usd_per_mtok_in * tokens / 1e6, 8.0 / 3600 * r1.ttft_s + energy_usd, 1e-9, "prefill cost");
    assert_rel((r2.cost.usd_per_mtok_in - r1.cost.usd_per_mtok_in) * tokens / 1e6, energy_usd, 1e-9,
               "price doubles the energy term only");
    assert_true(r1.cost.prefill_j > 8 * 1.5 * 250 * r1.ttft_s);
    assert_true(r1.cost.prefill_j < 8 * 1.5 * 1000 * r1.ttft_s);
}

/* The unknown-price rule: no capex -> every USD field is NaN (never 0) while the
 * energy stays known; no power at all -> the energy and USD fields are NaN. */
static void test_unknown_price_is_not_zero(void **state)
{
    (void)state;
    hl_cluster c = cluster();
    c.gpu.capex_usd = 0;
    hl_cost_phase pre = {2.0, 1.5, 4000}, dec = {10.0, 6.0, 396};
    hl_cost k;
    assert_false(hl_cost_price_known(&c));
    hl_cost_compute(&c, 8, 4, &pre, &dec, &k);
    assert_true(isnan(k.usd_per_mtok) && isnan(k.usd_per_mtok_in) && isnan(k.usd_per_mtok_out));
    assert_true(isnan(k.prefill_usd) && isnan(k.decode_usd) && isnan(k.capex_usd_per_gpu));
    assert_rel(k.prefill_j, 19500, 1e-12, "energy still known (as the hand-worked case)");
    c = cluster();
    c.gpu.power_w = 0;
    c.gpu.tdp_w = 0;
    assert_false(hl_cost_power_known(&c));
    hl_cost_compute(&c, 8, 4, &pre, &dec, &k);
    assert_true(isnan(k.energy_j) && isnan(k.joules_per_token) && isnan(k.power_w));
    assert_true(isnan(k.usd_per_mtok)); /* electricity unknown: the bill is unknown */
    assert_rel(k.usd_per_gpu_hour, 1.0, 1e-12, "capex rate still known");
}

/* Every GPU preset either carries a price and a power (estimates with a cost_source)
 * or says in its cost_source why it has none. */
static void test_presets_priced_or_explained(void **state)
{
    (void)state;
    for (int32_t i = 0; i < hl_preset_count(HL_PRESET_GPU); i++) {
        hl_gpu g;
        hl_err e;
        const char *name = hl_preset_name(HL_PRESET_GPU, i);
        assert_ok(hl_gpu_preset(name, &g, &e), &e);
        hl_cluster c;
        assert_ok(hl_cluster_init(&c, &g, 8, 8, &e), &e);
        if (!(hl_cost_price_known(&c) && hl_cost_power_known(&c)) && strstr(g.cost_source, "UNKNOWN") == NULL)
            fail_msg("GPU preset %s has no price or power and no cost_source saying why", name);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_hand_worked),
        cmocka_unit_test(test_fallbacks),
        cmocka_unit_test(test_simulation_carries_cost),
        cmocka_unit_test(test_unknown_price_is_not_zero),
        cmocka_unit_test(test_presets_priced_or_explained),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
