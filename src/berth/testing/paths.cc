// (Test helpers are header-only for now; this file keeps the library non-empty.)
#include "berth/testing/paths.h"
