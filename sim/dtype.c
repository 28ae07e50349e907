/* Element types of tensor files: sizes and names. */
#include "amp_base.h"
#include "amp_tensorio.h"

static const size_t dtype_size[AMP_DT_COUNT] = { 2, 2, 4, 8, 1, 1 };
static const char *const dtype_name[AMP_DT_COUNT] = { "f16", "bf16", "f32", "f64", "f8e4m3", "f8e5m2" };
_Static_assert(AMP_DT_COUNT == 6, "dtype tables cover every dtype");

size_t amp_dtype_size(amp_dtype dt)
{
    AMP_ASSERT(dt >= 0 && dt < AMP_DT_COUNT);
    return dtype_size[dt];
}

const char *amp_dtype_name(amp_dtype dt)
{
    return dt >= 0 && dt < AMP_DT_COUNT ? dtype_name[dt] : "?";
}
