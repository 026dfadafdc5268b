/* Presets (embedded + $HBDLAB_PRESETS on disk) and loading GPUs, clusters and models from
 * JSON objects through their field descriptor tables. The JSON rules are json.c's, file
 * reading is io.c's. */
#include "hbdlab/presets.h"

#include <cjson/cJSON.h>
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "embedded.h"
#include "err_int.h"
#include "fields_int.h"
#include "hbdlab/io.h"
#include "json_int.h"

extern const hl_embedded_file hl_embedded_presets[];
extern const int32_t hl_embedded_presets_count;

static const char *const kind_dirs[] = {"gpus", "clusters", "models"};

/* "GB200_NVL72" -> "gb200-nvl72" */
static void normalize(const char *in, char *out, size_t n)
{
    size_t i = 0;
    for (; in[i] && i + 1 < n; i++)
        out[i] = in[i] == '_' ? '-' : (char)tolower((unsigned char)in[i]);
    out[i] = '\0';
}

static int valid_name(const char *name)
{
    if (!name[0] || strlen(name) > 64)
        return 0;
    for (const char *p = name; *p; p++)
        if (!isalnum((unsigned char)*p) && *p != '-' && *p != '.' && *p != '_')
            return 0;
    return name[0] != '.';
}

/* ---- listing -------------------------------------------------------------- */
enum { MAX_PRESETS = 256 };
static char listed[MAX_PRESETS][72];
static int32_t nlisted = -1;
static int listed_kind = -1;

static int cmp_names(const void *a, const void *b) { return strcmp((const char *)a, (const char *)b); }

/* The preset name a file "<stem>.json" gives, its stem normalized ("H100_SXM.json" is h100-sxm),
 * into norm[cap]; 0 when the file is not a .json or its stem does not fit. */
static int json_preset_name(const char *file, char *norm, size_t cap)
{
    size_t len = strlen(file);
    char stem[128];
    if (len < 6 || strcmp(file + len - 5, ".json") != 0 || len - 5 >= cap || len - 5 >= sizeof stem)
        return 0;
    memcpy(stem, file, len - 5);
    stem[len - 5] = '\0';
    normalize(stem, norm, cap);
    return 1;
}

/* Lists a file's preset name (as lookups compare it), once. */
static void add_listed(const char *file)
{
    char name[sizeof listed[0]];
    if (nlisted >= MAX_PRESETS || !json_preset_name(file, name, sizeof name))
        return;
    for (int32_t i = 0; i < nlisted; i++)
        if (strcmp(listed[i], name) == 0)
            return;
    memcpy(listed[nlisted++], name, strlen(name) + 1);
}

static void build_list(hl_preset_kind kind)
{
    if (listed_kind == (int)kind && nlisted >= 0)
        return;
    nlisted = 0;
    listed_kind = (int)kind;
    const char *dir = kind_dirs[kind];
    size_t dl = strlen(dir);
    for (int32_t i = 0; i < hl_embedded_presets_count; i++) {
        const char *n = hl_embedded_presets[i].name;
        if (strncmp(n, dir, dl) == 0 && n[dl] == '/')
            add_listed(n + dl + 1);
    }
    const char *root = getenv("HBDLAB_PRESETS");
    if (root && *root) {
        char path[4096];
        snprintf(path, sizeof path, "%s/%s", root, dir);
        DIR *d = opendir(path);
        if (d) {
            struct dirent *e;
            while ((e = readdir(d)) != NULL)
                add_listed(e->d_name);
            closedir(d);
        }
    }
    qsort(listed, (size_t)nlisted, sizeof listed[0], cmp_names);
}

int32_t hl_preset_count(hl_preset_kind kind)
{
    if ((unsigned)kind > HL_PRESET_MODEL)
        return 0;
    build_list(kind);
    return nlisted;
}

const char *hl_preset_name(hl_preset_kind kind, int32_t i)
{
    if ((unsigned)kind > HL_PRESET_MODEL)
        return NULL;
    build_list(kind);
    return i >= 0 && i < nlisted ? listed[i] : NULL;
}

/* Common names a user types for a preset (normalized: lower case, '-'), by kind.
 * Only unambiguous ones: "h100" is the SXM part every H100 preset here models. */
static const struct preset_alias {
    int kind;
    const char *alias, *name;
} aliases[] = {
    {HL_PRESET_GPU, "h100", "h100-sxm"},
    {HL_PRESET_GPU, "h100-sxm5", "h100-sxm"},
    {HL_PRESET_GPU, "a100", "a100-sxm"},
    {HL_PRESET_GPU, "a100-sxm4", "a100-sxm"},
    {HL_PRESET_GPU, "h200-sxm", "h200"},
    {HL_PRESET_GPU, "b200-sxm", "b200"},
    {HL_PRESET_GPU, "mi300", "mi300x"},
    {HL_PRESET_GPU, "mi355", "mi355x"},
    {HL_PRESET_GPU, "910c", "ascend-910c"},
    {HL_PRESET_GPU, "v5p", "tpu-v5p"},
    {HL_PRESET_CLUSTER, "nvl72", "gb200-nvl72"},
    {HL_PRESET_CLUSTER, "dgx-h100", "hgx-h100"},
    {HL_PRESET_CLUSTER, "dgx-h200", "hgx-h200"},
    {HL_PRESET_CLUSTER, "dgx-b200", "hgx-b200"},
    {HL_PRESET_CLUSTER, "nvl36x2", "gb200-nvl36x2"},
    {HL_PRESET_CLUSTER, "cloudmatrix", "cloudmatrix384"},
    {HL_PRESET_MODEL, "qwen-110b", "qwen1.5-110b"},
    {HL_PRESET_MODEL, "gpt-oss", "gpt-oss-120b"},
    {HL_PRESET_MODEL, "mixtral", "mixtral-8x7b"},
    {HL_PRESET_MODEL, "deepseek-v3-0324", "deepseek-v3"},
    /* DeepSeek-R1 (and R1-0528) is DeepSeek-V3's architecture post-trained: its config.json has the same
     * DeepseekV3ForCausalLM shape (61 layers, hidden 7168, MLA, 256 routed experts top-8, 1 shared,
     * vocab 129280; huggingface.co/deepseek-ai/DeepSeek-R1 config.json) */
    {HL_PRESET_MODEL, "deepseek-r1", "deepseek-v3"},
    {HL_PRESET_MODEL, "deepseek-r1-0528", "deepseek-v3"},
};

/* Edit distance from a typed (normalized) name to preset `cand`: of the whole name, or one more
 * than of its closest '-'-separated part (a part match is a little weaker); 1 when the preset's
 * name starts with a typed name of 4 or more characters ("qwen3-235b" -> qwen3-235b-a22b). */
static int suggest_distance(const char *norm, const char *cand)
{
    size_t typed = strlen(norm);
    if (typed >= 4 && strncmp(cand, norm, typed) == 0)
        return 1;
    int d = hl_edit_distance(norm, cand);
    char part[72];
    const char *p = cand;
    while (*p) {
        size_t len = strcspn(p, "-");
        if (len < sizeof part) {
            memcpy(part, p, len);
            part[len] = '\0';
            int dp = hl_edit_distance(norm, part) + 1;
            if (dp < d)
                d = dp;
        }
        p += len + (p[len] == '-');
    }
    return d;
}

/* The preset an alias stands for (normalized name in), or NULL. */
static const char *alias_target(hl_preset_kind kind, const char *norm)
{
    for (size_t i = 0; i < sizeof aliases / sizeof aliases[0]; i++)
        if (aliases[i].kind == (int)kind && strcmp(aliases[i].alias, norm) == 0)
            return aliases[i].name;
    return NULL;
}

static hl_status find_named(hl_preset_kind kind, const char *name, const char **text, char **owned, char *origin,
                            size_t origin_n, hl_err *err);

/* Finds the preset text: disk override first, then embedded, then what an alias
 * names ("H100" -> h100-sxm). *owned is the malloc'd buffer to free (NULL for
 * embedded text). */
static hl_status find_preset(hl_preset_kind kind, const char *name, const char **text, char **owned, char *origin,
                             size_t origin_n, hl_err *err)
{
    hl_status s = find_named(kind, name, text, owned, origin, origin_n, err);
    if (s != HL_ENOTFOUND || !name || !valid_name(name))
        return s;
    char norm[80];
    normalize(name, norm, sizeof norm);
    const char *target = alias_target(kind, norm);
    if (!target)
        return s;
    hl_err ignored;
    return find_named(kind, target, text, owned, origin, origin_n, &ignored) == HL_OK ? HL_OK : s;
}

/* $HBDLAB_PRESETS must name a folder holding at least one of gpus/, clusters/, models/. A typo, a
 * file, or the models/ folder itself named instead of its parent was passed over in silence: every
 * preset came from the embedded set and the user's overrides were never read (attack12). */
static hl_status check_root(const char *root, hl_err *err)
{
    struct stat sb;
    if (stat(root, &sb) != 0)
        return hl_fail(err, HL_EINVAL,
                       "environment variable HBDLAB_PRESETS is '%s': %s (it names a folder holding gpus/, clusters/ "
                       "or models/ preset files; unset it to use the built-in presets only)",
                       root, strerror(errno));
    if (!S_ISDIR(sb.st_mode))
        return hl_fail(err, HL_EINVAL,
                       "environment variable HBDLAB_PRESETS is '%s': not a folder (it names a folder holding gpus/, "
                       "clusters/ or models/ preset files; unset it to use the built-in presets only)",
                       root);
    for (int k = 0; k < 3; k++) {
        char sub[4096];
        snprintf(sub, sizeof sub, "%s/%s", root, kind_dirs[k]);
        if (stat(sub, &sb) == 0 && S_ISDIR(sb.st_mode))
            return HL_OK;
    }
    return hl_fail(err, HL_EINVAL,
                   "environment variable HBDLAB_PRESETS is '%s': the folder holds none of gpus/, clusters/, models/ "
                   "(preset files go in those subfolders, e.g. %s/models/my-model.json)",
                   root, root);
}

/* The override file of preset `norm` (a normalized name) in $HBDLAB_PRESETS/<kind>/: the file whose
 * stem normalizes to it, so that "H100-SXM.json" or "my_gpu.json" (listed by hl.gpus()) is read,
 * not passed over for the embedded preset or reported unknown; its path goes to origin. Two files
 * naming one preset ("H100-SXM.json" and "h100-sxm.json") are refused, naming both.
 * HL_ENOTFOUND when there is none. */
static hl_status find_override(hl_preset_kind kind, const char *root, const char *norm, char *origin, size_t origin_n,
                               hl_err *err)
{
    char dir[4096];
    snprintf(dir, sizeof dir, "%s/%s", root, kind_dirs[kind]);
    DIR *d = opendir(dir);
    if (!d)
        return HL_ENOTFOUND;
    char first[256] = "";
    hl_status s = HL_ENOTFOUND;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        char stem_norm[80];
        if (e->d_name[0] == '.' || !json_preset_name(e->d_name, stem_norm, sizeof stem_norm) ||
            strcmp(stem_norm, norm) != 0)
            continue;
        if (first[0]) {
            s = hl_fail(err, HL_EINVAL,
                        "%s: two override files name %s preset '%s': %s and %s (names compare in lower case, "
                        "'_' as '-'; keep one)",
                        dir,
                        kind == HL_PRESET_GPU       ? "gpu"
                        : kind == HL_PRESET_CLUSTER ? "cluster"
                                                    : "model",
                        norm, first, e->d_name);
            break;
        }
        snprintf(first, sizeof first, "%s", e->d_name);
        snprintf(origin, origin_n, "%s/%s", dir, e->d_name);
        s = HL_OK;
    }
    closedir(d);
    return s;
}

static hl_status find_named(hl_preset_kind kind, const char *name, const char **text, char **owned, char *origin,
                            size_t origin_n, hl_err *err)
{
    char norm[80];
    *owned = NULL;
    if (!name || !valid_name(name))
        return hl_fail(err, HL_ENOTFOUND,
                       "%s preset name '%s' is not a valid name (1 to 64 letters, digits, '-', '.' "
                       "or '_', not starting with '.')",
                       kind == HL_PRESET_GPU       ? "gpu"
                       : kind == HL_PRESET_CLUSTER ? "cluster"
                                                   : "model",
                       name ? name : "(null)");
    normalize(name, norm, sizeof norm);
    const char *root = getenv("HBDLAB_PRESETS");
    if (root && *root) {
        hl_status s = check_root(root, err);
        if (s)
            return s;
        s = find_override(kind, root, norm, origin, origin_n, err);
        if (s == HL_OK) { /* read it (a FIFO or folder is refused there) */
            s = hl_read_file(origin, owned, err);
            if (s)
                return s;
            *text = *owned;
            return HL_OK;
        }
        if (s != HL_ENOTFOUND)
            return s;
    }
    char want[128];
    snprintf(want, sizeof want, "%s/%s.json", kind_dirs[kind], norm);
    for (int32_t i = 0; i < hl_embedded_presets_count; i++)
        if (strcmp(hl_embedded_presets[i].name, want) == 0) {
            *text = hl_embedded_presets[i].data;
            snprintf(origin, origin_n, "preset %s", want);
            return HL_OK;
        }
    /* Unknown: suggest the closest names. Each preset's distance is that of its whole name or of
     * its closest '-'-separated part ("nvl73" ~ "gb200-nvl72"). A name of 8 or more characters
     * also gets the presets one edit further than the closest (up to three): "llama-3-70b" is one
     * edit from llama-2-70b but meant one of the two llama-3.x-70b, two edits away. */
    enum { MAX_PICKS = 3 };
    int32_t n = hl_preset_count(kind);
    int best = 99;
    for (int32_t i = 0; i < n; i++) {
        int d = suggest_distance(norm, hl_preset_name(kind, i));
        if (d < best)
            best = d;
    }
    static const char *const what[] = {"gpu", "cluster", "model"};
    if (best <= (int)strlen(norm) / 2 + 1) {
        int reach = best + (strlen(norm) >= 8);
        const char *picks[MAX_PICKS];
        int np = 0;
        for (int d = best; d <= reach; d++) /* closest first, then in preset order */
            for (int32_t i = 0; i < n && np < MAX_PICKS; i++)
                if (suggest_distance(norm, hl_preset_name(kind, i)) == d)
                    picks[np++] = hl_preset_name(kind, i);
        char list[256];
        int at = 0;
        for (int k = 0; k < np; k++)
            at += snprintf(list + at, sizeof list - (size_t)at, "%s'%s'",
                           k == 0        ? ""
                           : k == np - 1 ? " or "
                                         : ", ",
                           picks[k]);
        return hl_fail(err, HL_ENOTFOUND, "unknown %s preset '%s' (did you mean %s?)", what[kind], name, list);
    }
    return hl_fail(err, HL_ENOTFOUND, "unknown %s preset '%s' (hl.%ss() lists them)", what[kind], name, what[kind]);
}

/* ---- JSON -> struct through descriptors ------------------------------------ */

/* The presets being loaded on this thread, outermost first: a preset's "base" (or a
 * cluster's "gpu") loads another preset while the first is still open, so a name that
 * is already on the chain is a cycle (a -> b -> a), refused before it recurses. */
enum { MAX_BASE_DEPTH = 16 };
static _Thread_local struct {
    int kind;
    char name[72];
} chain[MAX_BASE_DEPTH];
static _Thread_local int chain_len;

typedef hl_status (*preset_loader)(const char *name, void *out, hl_err *err);

/* Loads the members of the JSON object root into obj; keys in `skip` are left to the caller;
 * "base" starts from a preset loaded by base_loader. */
static hl_status load_object(const hl_field_set *set, void *obj, const cJSON *root, const char *origin,
                             const char *const *skip, preset_loader base_loader, hl_err *err)
{
    hl_status s;
    const cJSON *base = cJSON_GetObjectItemCaseSensitive(root, "base");
    if (base) {
        if (!base_loader || !cJSON_IsString(base))
            return hl_fail(err, HL_EINVAL, "%s: field 'base' must name a %s preset", origin, set->kind);
        s = base_loader(base->valuestring, obj, err);
        if (s) {
            if (chain_len <= 1) /* the outermost file only: a deep chain would repeat every file name */
                hl_err_prefix(err, origin);
            return s;
        }
    }
    for (const cJSON *item = root->child; item; item = item->next) {
        int skipped = strcmp(item->string, "base") == 0;
        for (int i = 0; skip && skip[i] && !skipped; i++)
            skipped = strcmp(item->string, skip[i]) == 0;
        if (skipped)
            continue;
        const hl_field_alias *alias = hl_field_alias_find(set, item->string);
        s = alias ? hl_field_alias_check(set, alias, cJSON_GetObjectItemCaseSensitive(root, alias->field) != NULL, err)
                  : HL_OK;
        if (!s)
            s = hl_json_set_field(set, obj, item, err);
        if (s) {
            hl_err_prefix(err, origin);
            return s;
        }
    }
    return HL_OK;
}

void hl_gpu_complete(hl_gpu *g)
{
    if (!g->name[0])
        strcpy(g->name, "custom");
}

void hl_model_complete(hl_model *m)
{
    if (m->attn == HL_ATTN_GQA && m->head_dim == 0 && m->heads > 0)
        m->head_dim = m->hidden / m->heads;
    if (m->kv_heads == 0)
        m->kv_heads = m->heads;
    if (!m->name[0])
        strcpy(m->name, "custom");
}

void hl_cluster_complete(hl_cluster *c, int32_t hbd_given, int32_t name_given)
{
    if (!hbd_given)
        c->hbd = c->gpus; /* default: the whole cluster is one HBD */
    if (!name_given)
        snprintf(c->name, sizeof c->name, "%.20s x%lld hbd%lld", c->gpu.name, (long long)c->gpus, (long long)c->hbd);
}

hl_status hl_field_alias_check(const hl_field_set *set, const hl_field_alias *alias, int32_t also_given, hl_err *err)
{
    if (!also_given)
        return HL_OK;
    return hl_fail(err, HL_EINVAL, "%s: both '%s' and '%s' given; use one", set->kind, alias->name, alias->field);
}

static hl_status gpu_base(const char *name, void *out, hl_err *err) { return hl_gpu_preset(name, out, err); }
static hl_status model_base(const char *name, void *out, hl_err *err) { return hl_model_preset(name, out, err); }

/* Adds origin in front of a failure's message; passes the status through. */
static hl_status with_origin(hl_status s, const char *origin, hl_err *err)
{
    if (s)
        hl_err_prefix(err, origin);
    return s;
}

/* The object loaders below take a parsed JSON object (borrowed), fill out (that kind's struct) and
 * prefix every error with origin. */
static hl_status gpu_from_object(const cJSON *root, const char *origin, void *out, hl_err *err)
{
    hl_gpu g;
    hl_gpu_init_defaults(&g);
    hl_status s = load_object(hl_gpu_fields(), &g, root, origin, NULL, gpu_base, err);
    if (!s)
        hl_gpu_complete(&g);
    if (!s)
        s = with_origin(hl_gpu_validate(&g, err), origin, err);
    if (!s)
        *(hl_gpu *)out = g;
    return s;
}

static hl_status model_from_object(const cJSON *root, const char *origin, void *out, hl_err *err)
{
    hl_model m;
    memset(&m, 0, sizeof m);
    hl_status s = load_object(hl_model_fields(), &m, root, origin, NULL, model_base, err);
    if (!s)
        hl_model_complete(&m);
    if (!s)
        s = with_origin(hl_model_validate(&m, err), origin, err);
    if (!s)
        *(hl_model *)out = m;
    return s;
}

/* The cluster's "gpu": a preset name or a GPU object. */
static hl_status cluster_gpu(const cJSON *g, const char *origin, hl_gpu *gpu, hl_err *err)
{
    if (cJSON_IsObject(g))
        return gpu_from_object(g, origin, gpu, err);
    hl_status s = cJSON_IsString(g)
                      ? hl_gpu_preset(g->valuestring, gpu, err)
                      : hl_fail(err, HL_EINVAL, "cluster field 'gpu' must be a GPU preset name or a GPU object");
    return with_origin(s, origin, err);
}

static hl_status cluster_from_object(const cJSON *root, const char *origin, void *out, hl_err *err)
{
    hl_gpu gpu;
    hl_status s = cluster_gpu(cJSON_GetObjectItemCaseSensitive(root, "gpu"), origin, &gpu, err);
    if (s)
        return s;
    if (!cJSON_IsNumber(cJSON_GetObjectItemCaseSensitive(root, "gpus")))
        return with_origin(hl_fail(err, HL_EINVAL, "cluster field 'gpus' is required (number of GPUs)"), origin, err);
    hl_cluster c;
    if ((s = hl_cluster_init(&c, &gpu, 1, 1, err))) /* link fields from the GPU; sizes set and checked below */
        return with_origin(s, origin, err);
    static const char *const skip[] = {"gpu", NULL};
    s = load_object(hl_cluster_fields(), &c, root, origin, skip, NULL, err);
    if (!s)
        hl_cluster_complete(&c, cJSON_GetObjectItemCaseSensitive(root, "hbd") != NULL,
                            cJSON_GetObjectItemCaseSensitive(root, "name") != NULL);
    if (!s)
        s = with_origin(hl_cluster_validate(&c, err), origin, err);
    if (!s)
        *(hl_cluster *)out = c;
    return s;
}

/* A loader of one kind from a parsed object; out points to that kind's struct. */
typedef hl_status (*object_loader)(const cJSON *root, const char *origin, void *out, hl_err *err);

/* Parses text and hands the object to load. */
static hl_status from_text(const char *text, const char *origin, void *out, object_loader load, hl_err *err)
{
    cJSON *root = NULL;
    hl_status s = hl_json_parse_object(text, origin, &root, err);
    if (!s)
        s = load(root, origin, out, err);
    cJSON_Delete(root);
    return s;
}

hl_status hl_gpu_from_json(const char *text, const char *origin, hl_gpu *out, hl_err *err)
{
    return from_text(text, origin, out, gpu_from_object, err);
}

hl_status hl_model_from_json(const char *text, const char *origin, hl_model *out, hl_err *err)
{
    return from_text(text, origin, out, model_from_object, err);
}

hl_status hl_cluster_from_json(const char *text, const char *origin, hl_cluster *out, hl_err *err)
{
    return from_text(text, origin, out, cluster_from_object, err);
}

/* ---- presets by name ------------------------------------------------------- */

/* Fails when (kind, norm) is already being loaded or the chain is too deep. */
static hl_status check_chain(hl_preset_kind kind, const char *norm, hl_err *err)
{
    static const char *const what[] = {"gpu", "cluster", "model"};
    int at = -1;
    for (int i = 0; i < chain_len && at < 0; i++)
        if (chain[i].kind == (int)kind && strcmp(chain[i].name, norm) == 0)
            at = i;
    if (at < 0 && chain_len < MAX_BASE_DEPTH)
        return HL_OK;
    char path[1024] = "";
    size_t used = 0;
    for (int i = at < 0 ? 0 : at; i < chain_len && used < sizeof path; i++)
        used += (size_t)snprintf(path + used, sizeof path - used, "%s%s", chain[i].name, " -> ");
    if (used < sizeof path)
        snprintf(path + used, sizeof path - used, "%s", norm);
    if (at < 0)
        return hl_fail(err, HL_EINVAL, "%s preset '%s': 'base' chain deeper than %d presets (%s)", what[kind], norm,
                       MAX_BASE_DEPTH, path);
    return hl_fail(err, HL_EINVAL, "%s preset '%s': 'base' cycle %s", what[kind], norm, path);
}

static hl_status load_preset(hl_preset_kind kind, const char *name, void *out, object_loader load, hl_err *err)
{
    const char *text = NULL;
    char *owned = NULL;
    char origin[4200];
    hl_status s = find_preset(kind, name, &text, &owned, origin, sizeof origin, err);
    if (s)
        return s;
    char norm[72];
    normalize(name, norm, sizeof norm);
    s = check_chain(kind, norm, err);
    if (s) {
        free(owned);
        return s;
    }
    chain[chain_len].kind = (int)kind;
    memcpy(chain[chain_len].name, norm, sizeof norm);
    chain_len++;
    s = from_text(text, origin, out, load, err);
    chain_len--;
    free(owned);
    return s;
}

hl_status hl_gpu_preset(const char *name, hl_gpu *out, hl_err *err)
{
    if (!out)
        return hl_fail(err, HL_EINVAL, "hl_gpu_preset: the output gpu is NULL");
    return load_preset(HL_PRESET_GPU, name, out, gpu_from_object, err);
}

hl_status hl_cluster_preset(const char *name, hl_cluster *out, hl_err *err)
{
    if (!out)
        return hl_fail(err, HL_EINVAL, "hl_cluster_preset: the output cluster is NULL");
    return load_preset(HL_PRESET_CLUSTER, name, out, cluster_from_object, err);
}

hl_status hl_model_preset(const char *name, hl_model *out, hl_err *err)
{
    if (!out)
        return hl_fail(err, HL_EINVAL, "hl_model_preset: the output model is NULL");
    return load_preset(HL_PRESET_MODEL, name, out, model_from_object, err);
}
