#include <tox/tox.h>
