#include "cli/card_names.hpp"

#include <cctype>
#include <string>

namespace oomlab::cli {

const Card* card_by_name(std::string_view text) {
  const auto key = [](std::string_view name) {
    std::string out;
    for (const char c : name) {
      if (std::isalnum(static_cast<unsigned char>(c)) != 0)
        out += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    }
    return out;
  };
  const std::string wanted = key(text);
  const Card* by_model = nullptr;
  int models = 0;
  for (const Card& card : known_cards()) {
    if (key(card.name) == wanted) return &card;
    const std::string_view model = card.name.substr(0, card.name.find('-'));
    if (key(model) == wanted) {
      by_model = &card;
      ++models;
    }
  }
  return models == 1 ? by_model : nullptr;
}

}  // namespace oomlab::cli
