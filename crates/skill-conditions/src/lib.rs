//! Conditions in CEL, the Common Expression Language: the `when` of a work rule, of a process's
//! wait, of a test's mock. A condition is compiled once (when a rule is written or a package is
//! checked) and evaluated over JSON: each top-level field of the input is a variable (`fact`,
//! `input`, …), and the result must be a boolean.
//!
//! The CEL implementation (`cel`, pinned exactly) stays behind [`Condition`], so it can be
//! swapped; one environment serves the whole process. The CEL specification's own cases that
//! apply to JSON run against it in the tests (`tests/cel-spec-cases.json`), so a version bump is
//! checked.
//!
//! ```
//! use serde_json::json;
//! use skill_conditions::Condition;
//!
//! let when = Condition::compile("fact.data.amount > 100 && fact.data.currency == 'EUR'").unwrap();
//! let fact = json!({"fact": {"data": {"amount": 250, "currency": "EUR"}}});
//! assert_eq!(when.eval(&fact), Ok(true));
//! let bad = Condition::compile("fact.data.amount >").unwrap_err();
//! assert_eq!((bad.line, bad.column > 0), (1, true));
//! ```

use std::fmt;
use std::sync::{Arc, OnceLock};

use serde_json::Value;

/// The longest source accepted, in bytes.
pub const MAX_SOURCE: usize = 2048;

/// Why a source is not a condition: the message, and where (1-based; 0 when the whole source).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CompileError {
    pub message: String,
    pub line: usize,
    pub column: usize,
}

impl fmt::Display for CompileError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.line == 0 {
            write!(f, "{}", self.message)
        } else {
            write!(f, "line {}, column {}: {}", self.line, self.column, self.message)
        }
    }
}

impl std::error::Error for CompileError {}

/// Why a condition has no boolean value for an input: a missing field, a type mismatch, a
/// division by zero, or a result that is not a boolean.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EvalError {
    pub message: String,
}

impl fmt::Display for EvalError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for EvalError {}

/// A compiled condition.
pub struct Condition {
    source: String,
    program: cel::Program,
}

impl fmt::Debug for Condition {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Condition").field("source", &self.source).finish()
    }
}

/// The process's one environment: CEL's standard functions and macros.
fn env() -> &'static Arc<cel::Env> {
    static ENV: OnceLock<Arc<cel::Env>> = OnceLock::new();
    ENV.get_or_init(|| Arc::new(cel::Env::stdlib()))
}

impl Condition {
    /// Compiles `source` (at most [`MAX_SOURCE`] bytes, not blank).
    pub fn compile(source: &str) -> Result<Self, CompileError> {
        if source.len() > MAX_SOURCE {
            return Err(CompileError {
                message: format!("a condition is at most {MAX_SOURCE} bytes; this one has {}", source.len()),
                line: 0,
                column: 0,
            });
        }
        if source.trim().is_empty() {
            return Err(CompileError { message: "a condition is not blank".to_owned(), line: 0, column: 0 });
        }
        let program = env().compile(source).map_err(|errors| {
            let first = errors.errors.first();
            let (line, column) = first.map_or((0, 0), |error| {
                (usize::try_from(error.pos.0).unwrap_or(0), usize::try_from(error.pos.1).unwrap_or(0))
            });
            let message = first.map_or_else(|| "not a CEL expression".to_owned(), |error| error.msg.clone());
            CompileError { message, line, column }
        })?;
        Ok(Self { source: source.to_owned(), program })
    }

    /// Compiles `source`, which may read only the variables `known` (a rule's condition reads
    /// `fact`): another one is refused at once, not when an input lacks it.
    pub fn compile_reading(source: &str, known: &[&str]) -> Result<Self, CompileError> {
        let compiled = Self::compile(source)?;
        if let Some(other) = compiled.variables().into_iter().find(|name| !known.contains(&name.as_str())) {
            return Err(CompileError {
                message: format!("`{other}` is not known here: this condition reads {}", known.join(", ")),
                line: 0,
                column: 0,
            });
        }
        Ok(compiled)
    }

    /// The source it was compiled from.
    pub fn source(&self) -> &str {
        &self.source
    }

    /// The variables it reads (sorted), so a caller can refuse one its input never has.
    pub fn variables(&self) -> Vec<String> {
        let mut names = std::collections::BTreeSet::new();
        free_variables(self.program.expression(), &mut Vec::new(), &mut names);
        names.into_iter().collect()
    }

    /// Its value over `input`, whose top-level fields are the variables.
    pub fn eval(&self, input: &Value) -> Result<bool, EvalError> {
        match self.value(input)? {
            cel::Value::Bool(value) => Ok(value),
            other => Err(EvalError { message: format!("the condition is a {:?}, not a boolean", other.type_of()) }),
        }
    }

    /// Its CEL value over `input` (what [`Condition::eval`] judges).
    fn value(&self, input: &Value) -> Result<cel::Value, EvalError> {
        let mut context = cel::Context::with_env(Arc::clone(env()));
        if let Value::Object(fields) = input {
            for (name, value) in fields {
                let value = cel::to_value(value).map_err(|error| EvalError {
                    message: format!("the input's field {name} is not a CEL value: {error}"),
                })?;
                context.add_variable_from_value(name.as_str(), value);
            }
        }
        self.program.execute(&context).map_err(|error| EvalError { message: error.to_string() })
    }
}

/// The identifiers `expression` reads that no enclosing comprehension binds, into `names`;
/// `bound` holds the variables of the comprehensions around it.
fn free_variables(expression: &cel::IdedExpr, bound: &mut Vec<String>, names: &mut std::collections::BTreeSet<String>) {
    use cel::common::ast::{EntryExpr, Expr};
    match &expression.expr {
        Expr::Ident(name) => {
            if !bound.contains(name) {
                names.insert(name.clone());
            }
        }
        Expr::Call(call) => {
            for inner in call.target.iter().map(AsRef::as_ref).chain(&call.args) {
                free_variables(inner, bound, names);
            }
        }
        Expr::Select(select) => free_variables(&select.operand, bound, names),
        Expr::List(list) => list.elements.iter().for_each(|inner| free_variables(inner, bound, names)),
        Expr::Map(map) => {
            for entry in &map.entries {
                if let EntryExpr::MapEntry(entry) = &entry.expr {
                    free_variables(&entry.key, bound, names);
                    free_variables(&entry.value, bound, names);
                }
            }
        }
        Expr::Struct(fields) => {
            for entry in &fields.entries {
                if let EntryExpr::StructField(field) = &entry.expr {
                    free_variables(&field.value, bound, names);
                }
            }
        }
        Expr::Comprehension(comprehension) => {
            free_variables(&comprehension.iter_range, bound, names);
            free_variables(&comprehension.accu_init, bound, names);
            let depth = bound.len();
            bound.push(comprehension.iter_var.clone());
            bound.extend(comprehension.iter_var2.clone());
            bound.push(comprehension.accu_var.clone());
            free_variables(&comprehension.loop_cond, bound, names);
            free_variables(&comprehension.loop_step, bound, names);
            free_variables(&comprehension.result, bound, names);
            bound.truncate(depth);
        }
        Expr::Literal(_) | Expr::Unspecified => {}
    }
}

#[cfg(test)]
mod spec;

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn a_condition_reads_its_input_and_is_a_boolean() {
        let when = Condition::compile("fact.kind == 'claim.received' && size(fact.data.text) > 3").expect("compiles");
        assert_eq!(when.variables(), ["fact"]);
        let macro_ = Condition::compile("fact.data.items.all(i, i.price > 0) && has(fact.data.x)").expect("compiles");
        assert_eq!(macro_.variables(), ["fact"], "a macro's own variable is not an input");
        let fact = |text: &str| json!({"fact": {"kind": "claim.received", "data": {"text": text}}});
        assert_eq!(when.eval(&fact("The parcel is late")), Ok(true));
        assert_eq!(when.eval(&fact("no")), Ok(false));
        let stray = Condition::compile_reading("facts.kind == 'x'", &["fact"]).expect_err("unknown variable");
        assert!(stray.message.contains("`facts`"), "{stray}");
        assert!(Condition::compile_reading("fact.kind == 'x'", &["fact"]).is_ok());
        let missing = when.eval(&json!({"fact": {"kind": "claim.received", "data": {}}})).expect_err("no text");
        assert!(missing.message.contains("text"), "{missing}");
        let number = Condition::compile("1 + 2").expect("compiles");
        assert!(number.eval(&json!({})).expect_err("not a boolean").message.contains("not a boolean"));
    }

    #[test]
    fn a_bad_source_says_where() {
        let bad = Condition::compile("fact.amount >\n  && true").expect_err("malformed");
        assert!(bad.line >= 1 && bad.column >= 1, "{bad:?}");
        let long = "true && ".repeat(300) + "true";
        assert_eq!(Condition::compile(&long).expect_err("too long").line, 0);
        assert!(Condition::compile("  ").is_err());
    }
}
