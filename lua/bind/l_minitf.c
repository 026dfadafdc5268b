/* Binding of the mini-transformer: core.minitf_run{...} and core.minitf_measure_cpu(). */
#include <stdlib.h>
#include <string.h>

#include "bind.h"

/* Sets t[k] = {v[0], ..., v[n-1]} on the table at the top of the stack. */
static void set_array(lua_State *L, const char *k, const double *v, int n)
{
    lua_createtable(L, n, 0);
    for (int i = 0; i < n; i++) {
        lua_pushnumber(L, v[i]);
        lua_rawseti(L, -2, i + 1);
    }
    lua_setfield(L, -2, k);
}

/* minitf_run{model, seed, tp, ep, pp, batch, prompt, new, kv_cache} ->
 * {tokens = {...}, logits = {...} (batch*new*vocab), stats = {...}} */
static int l_minitf_run(lua_State *L)
{
    luaL_checktype(L, 1, LUA_TTABLE);
    lua_getfield(L, 1, "model");
    hl_model *m = hl_to_model(L, -1);
    if (!m)
        return hl_error(L, "minitf: field 'model' must be a model object");
    lua_pop(L, 1);
    /* every number is range-checked before it is converted (a huge double to int is undefined) */
    hl_minitf_layout lay = {(int32_t)hl_opt_int_field(L, 1, "tp", 1, 1, 1024),
                            (int32_t)hl_opt_int_field(L, 1, "ep", 1, 1, 1024),
                            (int32_t)hl_opt_int_field(L, 1, "pp", 1, 1, 1024)};
    int batch = (int)hl_opt_int_field(L, 1, "batch", 2, 1, 64);
    int n_prompt = (int)hl_opt_int_field(L, 1, "prompt", 8, 1, 4096);
    int n_new = (int)hl_opt_int_field(L, 1, "new", 4, 1, 4096);
    uint64_t seed = (uint64_t)hl_opt_int_field(L, 1, "seed", 1, 0, (int64_t)1 << 53);
    int kv = hl_opt_bool_field(L, 1, "kv_cache", 1);
    if (batch < 1 || n_prompt < 1 || n_new < 1 || batch > 64 || n_prompt > 4096 || n_new > 4096)
        return hl_error(L, "minitf: batch 1..64, prompt and new 1..4096 (got %d, %d, %d)", batch, n_prompt, n_new);
    hl_err err;
    hl_minitf *tf;
    if (hl_minitf_new(m, seed, &tf, &err))
        return hl_raise(L, &err);
    int V = (int)m->vocab;
    int32_t *prompts = malloc(sizeof(int32_t) * (size_t)batch * n_prompt);
    int32_t *tokens = malloc(sizeof(int32_t) * (size_t)batch * n_new);
    float *logits = malloc(sizeof(float) * (size_t)batch * n_new * V);
    hl_minitf_stats *st = malloc(sizeof *st);
    if (!prompts || !tokens || !logits || !st) {
        free(prompts), free(tokens), free(logits), free(st);
        hl_minitf_free(tf);
        return hl_error(L, "minitf: out of memory");
    }
    uint64_t s = seed * 7919 + 13;
    for (int i = 0; i < batch * n_prompt; i++) { /* deterministic prompts */
        s = s * 6364136223846793005ULL + 1442695040888963407ULL;
        prompts[i] = (int32_t)((s >> 33) % (uint64_t)V);
    }
    hl_status status = hl_minitf_generate(tf, &lay, batch, prompts, n_prompt, n_new, kv, tokens, logits, st, &err);
    hl_minitf_free(tf);
    if (status) {
        free(prompts), free(tokens), free(logits), free(st);
        return hl_raise(L, &err);
    }
    lua_createtable(L, 0, 3);
    lua_createtable(L, batch * n_new, 0);
    for (int i = 0; i < batch * n_new; i++) {
        lua_pushinteger(L, tokens[i]);
        lua_rawseti(L, -2, i + 1);
    }
    lua_setfield(L, -2, "tokens");
    lua_createtable(L, batch * n_new * V, 0);
    for (int i = 0; i < batch * n_new * V; i++) {
        lua_pushnumber(L, logits[i]);
        lua_rawseti(L, -2, i + 1);
    }
    lua_setfield(L, -2, "logits");
    lua_createtable(L, 0, 12);
    int n = st->ranks;
    lua_pushinteger(L, n);
    lua_setfield(L, -2, "ranks");
    const struct {
        const char *k;
        const double *v;
    } per_rank[] = {{"prefill_flops", st->prefill_model_flops},
                    {"decode_flops", st->decode_model_flops},
                    {"expert_flops", st->expert_flops},
                    {"weight_bytes", st->weight_bytes},
                    {"kv_bytes", st->kv_bytes},
                    {"allreduce_bytes", st->allreduce_bytes},
                    {"alltoall_bytes", st->alltoall_bytes},
                    {"sendrecv_bytes", st->sendrecv_bytes},
                    {"allgather_bytes", st->allgather_bytes}};
    for (size_t i = 0; i < sizeof per_rank / sizeof per_rank[0]; i++)
        set_array(L, per_rank[i].k, per_rank[i].v, n);
    hl_set_num(L, "alltoall_volume", st->alltoall_volume);
    hl_set_num(L, "extra_flops", st->extra_flops);
    hl_set_num(L, "prefill_s", st->prefill_s);
    hl_set_num(L, "decode_s", st->decode_s);
    lua_setfield(L, -2, "stats");
    free(prompts), free(tokens), free(logits), free(st);
    return 1;
}

static int l_minitf_measure_cpu(lua_State *L)
{
    double f, bw;
    hl_err err;
    if (hl_minitf_measure_cpu((int32_t)luaL_optinteger(L, 1, 512), luaL_optnumber(L, 2, 256e6), &f, &bw, &err))
        return hl_raise(L, &err);
    lua_pushnumber(L, f);
    lua_pushnumber(L, bw);
    return 2;
}

void hl_bind_minitf(lua_State *L)
{
    static const luaL_Reg fns[] = {
        {"minitf_run", l_minitf_run}, {"minitf_measure_cpu", l_minitf_measure_cpu}, {NULL, NULL}};
    luaL_setfuncs(L, fns, 0);
}
