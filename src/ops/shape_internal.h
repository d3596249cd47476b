/* Helpers shared by the shape and index families (not public API). */
#ifndef LC_SHAPE_INTERNAL_H
#define LC_SHAPE_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "core/node.h"

#include "core/copy.h"

#endif
