/*
 * model_none.c -- the mpl_model_* functions of a library built without the model module
 * (CMake -DMPLINEAR_MODEL=OFF, or json-c not found): opening a folder is MPL_ERR_UNSUPPORTED
 * with a message saying so; since no model can exist, every other function sees a NULL model
 * and answers as model.c does for one.
 */
#include <stddef.h>

#include "../core/internal.h"

mpl_status mpl_model_open(const char *dir, mpl_model **out) {
    (void)dir;
    if (out) *out = NULL;
    return mpl_set_error(MPL_ERR_UNSUPPORTED,
                         "mpl_model_open: libmplinear was built without the model module (checkpoint folders need "
                         "json-c; configure with -DMPLINEAR_MODEL=ON)");
}

void mpl_model_close(mpl_model *m) { (void)m; }
const char *mpl_model_quant_method(const mpl_model *m) { (void)m; return NULL; }
mpl_act mpl_model_act(const mpl_model *m) { (void)m; return (mpl_act)0; }
int mpl_model_layer_count(const mpl_model *m) { (void)m; return 0; }

static mpl_status no_model(const char *fn) {
    return mpl_set_error(MPL_ERR_INVALID_ARGUMENT, "%s: model is NULL (this build has no model module)", fn);
}

mpl_status mpl_model_layer_get(const mpl_model *m, int i, mpl_model_layer_info *out) {
    (void)m, (void)i, (void)out;
    return no_model("mpl_model_layer_get");
}

mpl_status mpl_model_find_layer(const mpl_model *m, const char *name, int *index) {
    (void)m, (void)name, (void)index;
    return no_model("mpl_model_find_layer");
}

mpl_status mpl_model_layer_create(const mpl_model *m, int i, const mpl_options *opt, mpl_act act, mpl_layer **out) {
    (void)m, (void)i, (void)opt, (void)act;
    if (out) *out = NULL;
    return no_model("mpl_model_layer_create");
}

mpl_status mpl_model_layer_bias(const mpl_model *m, int i, mpl_act act, void *out) {
    (void)m, (void)i, (void)act, (void)out;
    return no_model("mpl_model_layer_bias");
}

const char *mpl_model_layer_order(const mpl_model *m) { (void)m; return NULL; }

mpl_status mpl_model_layer_choose(const mpl_model *m, int i, const mpl_options *opt, mpl_act act, const char **chosen) {
    (void)m, (void)i, (void)opt, (void)act;
    if (chosen) *chosen = NULL;
    return no_model("mpl_model_layer_choose");
}
