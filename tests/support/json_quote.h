#pragma once

// JsonQuote: `text` as a JSON string literal, for request bodies and summaries that tests and
// the e2e tools write by hand.

#include <string>

namespace hawk::testing {

// Quotes included; escapes '"', '\\', \n, \r, \t and every other control byte (\u00XX).
std::string JsonQuote(const std::string& text);

}  // namespace hawk::testing
