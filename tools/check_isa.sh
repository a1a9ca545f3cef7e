#!/usr/bin/env bash
# tools/check_isa.sh BUILD_DIR -- checks that every x86 ISA folder's object files hold only
# instructions of that folder's level (docs/naming.md, src/kernels/x86/sources.cmake), and that the
# plain-flag files beside the folders (descriptors, drivers: they run before any ISA is known to
# exist) hold no AVX at all.
#
# For each folder src/kernels/x86/<level>/ that has sources, the objects are found by searching
# BUILD_DIR (target names may change) for */src/kernels/x86/<level>/<name>.c.o (or <name>.o); a
# source without an object, or an object of an unknown folder, is an error. Each object is
# disassembled with objdump (Intel syntax) and every instruction is checked against its level:
#
#   level       forbidden (beyond the classes no level has: AVX512-FP16, IFMA, VBMI/VBMI2, BITALG,
#               VPOPCNTDQ, CD, ER/PF, 4FMAPS/4VNNIW, VP2INTERSECT, GFNI, VAES/AES, VPCLMUL, SHA,
#               BMI1/BMI2 VEX forms, AVX-VNNI-INT8/INT16, AVX-NE-CONVERT, AMX-FP16/COMPLEX)
#   plain       any VEX or EVEX encoding, ymm/zmm/k/tmm registers (baseline x86-64: SSE2 at most)
#   avx2        EVEX encodings, zmm/k/tmm registers, VNNI (vpdpbusd/vpdpwssd), BF16, AMX
#   avxvnni     as avx2, except VEX-encoded ({vex}) vpdpbusd/vpdpbusds/vpdpwssd/vpdpwssds
#   avx512      VNNI, BF16, AMX
#   avx512vnni  BF16, AMX
#   avx512bf16  VNNI, AMX (BF16 only in its EVEX AVX512-BF16 forms)
#   amx         (nothing more)
#
# Each violation prints one line: object, function, instruction and the rule it breaks. Exit status:
# 0 all clean, 1 violations, 2 usage or setup error (no objdump, missing objects).
set -euo pipefail

die() {
    echo "check_isa: error: $*" >&2
    exit 2
}

[ $# -eq 1 ] || die "usage: tools/check_isa.sh BUILD_DIR (a CMake build tree of this repository)"
build=$1
[ -d "$build" ] || die "BUILD_DIR '$build' is not a directory"
command -v objdump >/dev/null 2>&1 || die "objdump not found (Debian: apt-get install binutils)"
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
x86=$root/src/kernels/x86
[ -d "$x86" ] || die "no $x86 (is this script inside the repository?)"

levels=(avx2 avxvnni avx512 avx512vnni avx512bf16 amx)

# Objects under BUILD_DIR in a folder of src/kernels/x86 that has no level: a new folder needs a row here.
unknown=$(find "$build" -type f -name '*.o' -path '*/src/kernels/x86/*/*' | while IFS= read -r obj; do
    rel=${obj##*/src/kernels/x86/}
    folder=${rel%%/*}
    known=0
    for l in "${levels[@]}"; do [ "$folder" = "$l" ] && known=1; done
    [ $known -eq 1 ] || echo "$obj"
done)
[ -z "$unknown" ] || die "objects in a folder without an ISA level (add it to tools/check_isa.sh and sources.cmake): $unknown"

# The checker: reads `objdump -d -M intel` of one object, prints violations, exits 1 if any.
read -r -d '' AWK <<'EOF' || true
function bad(why) {
    printf "%s: %s: %s  [%s]\n", obj, fn, insn, why
    nbad++
}
BEGIN { nbad = 0; ninsn = 0; fn = "?" }
/^[0-9a-f]+ <.*>:$/ { fn = $2; gsub(/[<>:]/, "", fn); next }
/^ *[0-9a-f]+:\t/ {
    n = split($0, f, "\t")
    if (n < 3) next                          # continuation line: more bytes of the last instruction
    insn = f[3]
    sub(/[ \t]+$/, "", insn)
    if (insn == "" || insn ~ /^\(bad\)/) next
    ninsn++
    # Encoding from the first opcode byte after the legacy prefixes: 62 EVEX, c4/c5 VEX (64-bit mode).
    nb = split(f[2], by, " ")
    enc = "legacy"
    for (i = 1; i <= nb; i++) {
        if (by[i] ~ /^(26|2e|36|3e|64|65|66|67|f0|f2|f3)$/) continue
        if (by[i] == "62") enc = "evex"
        else if (by[i] == "c4" || by[i] == "c5") enc = "vex"
        break
    }
    # Mnemonic: the first word that is not a prefix; operands: the rest, without symbol names.
    nw = split(insn, w, " ")
    mn = ""
    for (i = 1; i <= nw; i++) {
        if (w[i] ~ /^(\{vex\}|\{vex3\}|\{evex\}|\{disp32\}|rep|repz|repnz|repe|repne|lock|notrack|bnd|data16|addr32|cs|ds|es|ss|fs|gs|rex(\.[WRXB]+)?)$/) continue
        mn = w[i]
        break
    }
    ops = ""
    for (j = i + 1; j <= nw; j++) ops = ops " " w[j]
    gsub(/<[^>]*>/, "", ops)
    gsub(/#.*/, "", ops)

    # Classes no level has.
    if (mn ~ /^v[a-z0-9]*(ph|sh|phx)$/ && mn != "vcvtps2ph") bad("AVX512-FP16: in no level")
    else if (mn ~ /^vcvtt?[a-z0-9]*ph2/ && mn != "vcvtph2ps") bad("AVX512-FP16: in no level")
    else if (mn == "vmovw") bad("AVX512-FP16: in no level")
    if (mn ~ /^vpmadd52/) bad("AVX512-IFMA: in no level")
    if (mn ~ /^(vpermb|vpermi2b|vpermt2b|vpmultishiftqb|vpcompress[bw]|vpexpand[bw]|vpsh[lr]dv?[wdq])$/) bad("AVX512-VBMI/VBMI2: in no level")
    if (mn ~ /^(vpopcnt[bwdq]|vpshufbitqmb)$/) bad("AVX512-BITALG/VPOPCNTDQ: in no level")
    if (mn ~ /^(vpconflict[dq]|vplzcnt[dq]|vpbroadcastm)/) bad("AVX512-CD: in no level")
    if (mn ~ /^(vexp2|vrcp28|vrsqrt28|vgatherpf|vscatterpf|v4f|vp4dpw|vp2intersect)/) bad("AVX512-ER/PF/4FMAPS/4VNNIW/VP2INTERSECT: in no level")
    if (mn ~ /^v?gf2p8/) bad("GFNI: in no level")
    if (mn ~ /^v?(aes|pclmul)/) bad("AES/VAES/VPCLMULQDQ: in no level")
    if (mn ~ /^v?sha(1|256|512)/ || mn ~ /^vsm[34]/) bad("SHA/SM3/SM4: in no level")
    if (mn ~ /^(andn|bextr|blsi|blsmsk|blsr|bzhi|mulx|pdep|pext|rorx|sarx|shlx|shrx)$/) bad("BMI1/BMI2: in no level")
    if (mn ~ /^vpdp/ && mn !~ /^vpdp(busd|busds|wssd|wssds)$/) bad("AVX-VNNI-INT8/INT16: in no level")
    if (mn ~ /^(vbcstne|vcvtnee|vcvtneo)/) bad("AVX-NE-CONVERT: in no level")
    if (mn ~ /^(tdpfp16ps|tcmm)/) bad("AMX-FP16/AMX-COMPLEX: in no level")

    vnni = mn ~ /^vpdp(busd|busds|wssd|wssds)$/
    amx = mn ~ /^(ldtilecfg|sttilecfg|tilerelease|tilezero|tileload|tilestore|tdp)/ || ops ~ /(^|[^a-z0-9_])tmm[0-7]/
    bf16 = mn ~ /bf16/ && !amx
    zmm = ops ~ /(^|[^a-z0-9_])zmm[0-9]+/
    ymm = ops ~ /(^|[^a-z0-9_])ymm[0-9]+/
    kreg = ops ~ /(^|[^a-z0-9_])k[0-7]([^a-z0-9_]|$)/

    if (level == "plain") {
        if (enc != "legacy") bad(toupper(enc) " encoding: plain-flag files run before any ISA is known (no AVX)")
        else if (ymm || zmm || kreg || amx) bad("AVX register in a plain-flag file")
        next
    }
    if (amx && level != "amx") bad("AMX: not in level " level)
    if (level == "avx2" || level == "avxvnni") {
        if (enc == "evex") bad("EVEX encoding: AVX-512, not in level " level)
        if (zmm || kreg) bad("zmm/k register: AVX-512, not in level " level)
        if (vnni && !(level == "avxvnni" && enc == "vex")) bad("VNNI: not in level " level)
        if (bf16) bad("BF16: not in level " level)
        next
    }
    # The avx512 levels and amx.
    if (vnni && level != "avx512vnni" && level != "amx") bad("VNNI: not in level " level)
    if (bf16 && level != "avx512bf16" && level != "amx") bad("BF16: not in level " level)
    else if (bf16 && enc != "evex") bad("BF16 in a VEX form (AVX-NE-CONVERT): not in level " level)
    next
}
END {
    if (ninsn == 0) {
        printf "%s: no instructions disassembled (an LTO or empty object cannot be checked)\n", obj
        exit 3
    }
    exit nbad ? 1 : 0
}
EOF

total=0
violations=0
for level in "" "${levels[@]}"; do
    name=${level:-plain}
    dir=$x86${level:+/$level}
    shopt -s nullglob
    srcs=("$dir"/*.c)
    shopt -u nullglob
    if [ "${#srcs[@]}" -eq 0 ]; then
        echo "check_isa: $name: no sources in src/kernels/x86/$level, nothing to check"
        continue
    fi
    # The objects of each source, wherever the build put them (target names may change).
    objs=()
    for src in "${srcs[@]}"; do
        base=$(basename "$src")
        mapfile -t found < <(find "$build" -type f \( -name "$base.o" -o -name "${base%.c}.o" \) \
                                 -path "*/src/kernels/x86${level:+/$level}/$base*" | sort)
        [ "${#found[@]}" -gt 0 ] ||
            die "no object for src/kernels/x86/${level:+$level/}$base under $build (not built, or built elsewhere)"
        objs+=("${found[@]}")
    done
    for obj in "${objs[@]}"; do
        set +e
        objdump -d -M intel "$obj" | awk -v level="$name" -v obj="${obj#"$build"/}" "$AWK"
        rc=("${PIPESTATUS[@]}")
        set -e
        [ "${rc[0]}" -eq 0 ] || die "objdump failed on $obj"
        case ${rc[1]} in
        0) ;;
        1) violations=$((violations + 1)) ;;
        3) die "$obj: nothing to check" ;;
        *) die "awk failed on $obj (status ${rc[1]})" ;;
        esac
    done
    total=$((total + ${#objs[@]}))
    echo "check_isa: $name: ${#srcs[@]} sources, ${#objs[@]} objects checked"
done

if [ "$violations" -gt 0 ]; then
    echo "check_isa: FAILED: $violations of $total objects hold instructions outside their ISA level (lines above)" >&2
    exit 1
fi
echo "check_isa: OK: $total objects, every instruction within its folder's ISA level"
