// Interposed MPI entry points are the only symbols libdtmpi exports besides
// the dtmpi_* C API; everything else is hidden (-fvisibility=hidden).
#pragma once
#define DTMPI_EXPORT extern "C" __attribute__((visibility("default")))
